/**
 * Kernel port: an account's subscription standing (docs/contracts.md `platform accounts set
 * --subscription active|paused`). Spec 5.4 refuses commerce routes without an active, non-paused
 * subscription. Provided by identity; declared here, beside the other ports, by augmenting
 * `KernelPorts` so the port list gains one entry without editing `ports.ts`.
 */
export const SUBSCRIPTION_STATES = ['active', 'paused', 'inactive'] as const;
export type SubscriptionState = (typeof SUBSCRIPTION_STATES)[number];

export interface AccountStanding {
  /** The account's subscription state; an unknown account is `inactive`. */
  subscriptionOf(accountId: string): Promise<SubscriptionState>;
}

declare module './ports' {
  interface KernelPorts {
    accountStanding: AccountStanding;
  }
}
