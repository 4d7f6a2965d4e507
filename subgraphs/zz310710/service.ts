import { type Principal, requirePrincipal } from '../../core/principal';

/** What the zz310710 area tells a caller about itself. */
export interface Zz310710Status {
  area: string;
  accountId: string;
  note: string | null;
}

/** The zz310710 area's rules. Resolvers and routes stay thin; everything the area decides lives here. */
export class Zz310710Service {
  status(principal: Principal | null, note?: string | null): Zz310710Status {
    const p = requirePrincipal(principal);
    return { area: 'zz310710', accountId: p.accountId, note: note ?? null };
  }
}
