import { badRequest } from '../../core/errors';
import { encryptSecret } from '../../core/secrets';
import { normalizeDomain, normalizeEmail, relaxedAligned } from '../../core/domain-names';
import type { NewsletterProviderDoc, PublisherModels, SiteDoc } from './model';
import type { VerifiedSenders } from '../../core/ports';
import { MAX_FROM_NAME_LENGTH, MAX_REGION_LENGTH } from './limits';

/** Newsletter-provider region: a short lowercase code such as `us` or `eu`. */
const REGION = new RegExp(`^[a-z]{2}[a-z0-9-]{0,${MAX_REGION_LENGTH - 2}}$`);
/** Provider API keys: 8–512 visible ASCII characters. */
const API_KEY = /^[\x21-\x7e]{8,512}$/;
/** Longest `from_name`, in characters. */

export interface NewsletterProviderInput {
  domain: string;
  region: string;
  /** Write-only. Omitted on an update: the stored key is kept. */
  apiKey?: string | null;
  fromEmail: string;
  fromName?: string | null;
}

/** The secret-safe mail view: the API key shows only as `hasApiKey`. */
export interface MailSettingsView {
  enabled: boolean;
  transactional: { configured: boolean; senderEmail: string | null; verified: boolean };
  newsletterProvider: {
    configured: boolean;
    domain: string | null;
    region: string | null;
    fromEmail: string | null;
    fromName: string | null;
    hasApiKey: boolean;
    updatedAt: Date | null;
  };
}

/** A site's transactional sender and newsletter-provider mapping. Access is checked by the caller. */
export class MailSettings {
  constructor(
    private readonly models: PublisherModels,
    private readonly senders: () => VerifiedSenders,
  ) {}

  async view(site: SiteDoc): Promise<MailSettingsView> {
    const [provider, verified] = await Promise.all([
      this.models.NewsletterProvider.findById(site._id).lean(),
      site.mailSenderEmail ? this.senders().isVerified(site.accountId, site.mailSenderEmail) : Promise.resolve(false),
    ]);
    return {
      enabled: site.mailEnabled,
      transactional: { configured: Boolean(site.mailSenderEmail), senderEmail: site.mailSenderEmail ?? null, verified },
      newsletterProvider: providerView(provider),
    };
  }

  /** Sets the transactional sender; it must be a verified sender of the site's account. */
  async setSender(site: SiteDoc, senderEmail: string): Promise<SiteDoc> {
    const email = normalizeEmail(senderEmail, 'sender_email');
    if (!(await this.senders().isVerified(site.accountId, email))) {
      throw badRequest('sender_not_verified', `${email} is not a verified sender of this account`, { sender_email: email });
    }
    const updated = await this.models.Site.findOneAndUpdate(
      { _id: site._id },
      { $set: { mailSenderEmail: email, updatedAt: new Date() } },
      { new: true },
    ).lean();
    return updated ?? { ...site, mailSenderEmail: email };
  }

  /** Replaces the provider configuration; the API key is stored encrypted (kept when omitted). */
  async setProvider(site: SiteDoc, input: NewsletterProviderInput): Promise<void> {
    const v = validateProvider(input);
    const existing = await this.models.NewsletterProvider.findById(site._id).lean();
    if (!v.apiKey && !existing)
      throw badRequest('api_key_required', 'api_key is required to configure a newsletter provider', { field: 'api_key' });
    const now = new Date();
    const $set: Partial<NewsletterProviderDoc> = {
      accountId: site.accountId,
      domain: v.domain,
      region: v.region,
      fromEmail: v.fromEmail,
      fromName: v.fromName,
      updatedAt: now,
    };
    if (v.apiKey) {
      $set.apiKeyCiphertext = encryptSecret(v.apiKey, providerKeyAad(site._id));
      await this.models.NewsletterProvider.updateOne(
        { _id: site._id },
        { $set, $setOnInsert: { createdAt: now } },
        { upsert: true },
      );
      return;
    }
    // Keeping the stored key: only an existing configuration is updated (it may have just been deleted).
    const kept = await this.models.NewsletterProvider.updateOne({ _id: site._id }, { $set });
    if (kept.matchedCount === 0)
      throw badRequest('api_key_required', 'api_key is required to configure a newsletter provider', { field: 'api_key' });
  }

  /** Removes the mapping and the encrypted configuration; idempotent. */
  async deleteProvider(site: SiteDoc): Promise<void> {
    await this.models.NewsletterProvider.deleteOne({ _id: site._id });
  }
}

function providerView(p: NewsletterProviderDoc | null): MailSettingsView['newsletterProvider'] {
  return {
    configured: Boolean(p),
    domain: p?.domain ?? null,
    region: p?.region ?? null,
    fromEmail: p?.fromEmail ?? null,
    fromName: p?.fromName ?? null,
    hasApiKey: Boolean(p?.apiKeyCiphertext),
    updatedAt: p?.updatedAt ?? null,
  };
}

/**
 * Provider settings as stored. `from_email` must be aligned with the provider's sending domain
 * under DMARC's relaxed rule (same organizational domain), so the provider's signature passes
 * DMARC; an unrelated domain is refused. Error messages never echo
 * the API key.
 */
export function validateProvider(input: NewsletterProviderInput) {
  const domain = normalizeDomain(input.domain);
  const region = String(input.region ?? '').toLowerCase();
  if (!REGION.test(region))
    throw badRequest('invalid_region', 'region must be a short lowercase code such as `us` or `eu`', { field: 'region' });
  const apiKey = input.apiKey ?? null;
  if (apiKey !== null && !API_KEY.test(apiKey)) {
    throw badRequest('invalid_api_key', 'api_key must be 8 to 512 visible ASCII characters', { field: 'api_key' });
  }
  const fromEmail = normalizeEmail(input.fromEmail, 'from_email');
  // DMARC relaxed alignment: the usual setup sends `news@example.com` through `mg.example.com`.
  if (!relaxedAligned(fromEmail.slice(fromEmail.lastIndexOf('@') + 1), domain)) {
    throw badRequest('invalid_from_email', `from_email must be an address of the organization of ${domain}`, {
      field: 'from_email',
    });
  }
  const fromName = input.fromName?.trim() || null;
  if (fromName && (fromName.length > MAX_FROM_NAME_LENGTH || /\p{Cc}/u.test(fromName))) {
    throw badRequest('invalid_from_name', `from_name must be at most ${MAX_FROM_NAME_LENGTH} characters on one line`, {
      field: 'from_name',
    });
  }
  return { domain, region, apiKey, fromEmail, fromName };
}

/** What binds a stored provider key to its record (core/secrets.ts): copied elsewhere, it does not open. */
export const providerKeyAad = (siteId: string): string => `publisher_newsletter_providers:${siteId}:apiKey`;
