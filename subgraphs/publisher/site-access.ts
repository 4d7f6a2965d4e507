import { notFound } from '../../core/errors';
import { isUuid } from '../../core/ids';
import { type Principal, requirePrincipal, requireWriter } from '../../core/principal';
import type { PublisherModels, SiteDoc } from './model';

/**
 * Who may see and change a site: the feature flag of the environment (off: 404 everywhere), a key
 * for reads, a writing role for changes, and the caller's own account (another's site is concealed
 * as a missing one).
 */
export class SiteAccess {
  constructor(
    private readonly models: PublisherModels,
    private readonly features: { publisherEnabled: boolean },
  ) {}

  reader(principal: Principal | null): Principal {
    const p = requirePrincipal(principal);
    if (!this.features.publisherEnabled) throw notFound('publisher_disabled', 'publishing is not enabled in this environment');
    return p;
  }

  writer(principal: Principal | null): Principal {
    this.reader(principal);
    return requireWriter(principal);
  }

  /**
   * The principal's site for a project; a missing or foreign one is concealed as 404, and so is a
   * deleted one (unless `includeDeleted`: its operations stay readable).
   */
  async site(p: Principal, projectId: string, opts: { includeDeleted?: boolean } = {}): Promise<SiteDoc> {
    const site = isUuid(projectId) ? await this.models.Site.findById(projectId).lean() : null;
    if (!site || site.accountId !== p.accountId) throw notFound('project_not_found', 'project not found');
    if (site.status === 'deleted' && !opts.includeDeleted) throw notFound('project_not_found', 'project not found');
    return site;
  }
}
