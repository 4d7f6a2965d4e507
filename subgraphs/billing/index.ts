import { areaScopes } from '../../core/scopes';
import { z } from 'zod';
import { CliUsageError, defineArea } from '../../core/area';
import { buildSubgraph } from '../../core/subgraph-kit';
import { Checkouts } from './checkouts';
import { Funding } from './funding';
import { Ledger } from './ledger';
import { PRODUCTS, billingModels } from './model';
import { DEV_WEBHOOK_SECRET, type PaymentProvider, TestPaymentProvider } from './payment-provider';
import { BillingResolver } from './resolvers';
import { billingByteRoutes } from './byte-routes';
import { billingRoutes } from './routes';
import { BillingService } from './service';
import { startPaymentProviderStandIn } from './stand-in/payment-provider';
import { WEBHOOK_PATH, paymentWebhooks } from './webhooks';
import { checkoutJson, entryJson } from './views';

export { BillingService } from './service';

const settings = z.object({
  /** The payment provider's API (the `test` provider); unset → the local stand-in is started. */
  PAYMENT_PROVIDER_URL: z.string().url().optional(),
  /** Standard Webhooks secret (`whsec_…`) the provider signs its webhooks with. */
  PAYMENT_WEBHOOK_SECRET: z.string().min(16).optional(),
});
type Settings = z.infer<typeof settings>;

/** AI credits (spec 2.4, 4.4): the ledger, usage, quotes, checkout and funding preferences. */
export default defineArea<BillingService, Settings>({
  name: 'billing',
  portOffset: 6,
  config: settings,
  services(ctx) {
    const models = billingModels(ctx.conn);
    const ledger = new Ledger(models);
    const test = new TestPaymentProvider(
      () => ctx.settings.PAYMENT_PROVIDER_URL,
      ctx.settings.PAYMENT_WEBHOOK_SECRET ?? DEV_WEBHOOK_SECRET,
    );
    const providers = new Map<string, PaymentProvider>([[test.name, test]]);
    // Read at call time: with a random bridge port the base URL is known only once it listens.
    const checkouts = new Checkouts(models, ledger, providers, (p) => `${ctx.config.baseUrl}${WEBHOOK_PATH}/${p}`);
    return new BillingService(models, ledger, checkouts, new Funding(models), ctx.ports, test);
  },
  subgraph: (services) => ({
    resolvers: [BillingResolver],
    createResolver: (cls) => new cls(services),
  }),
  provides(services, ports) {
    ports.provide('credits', { recordUsage: (u) => services.recordUsage(u) });
  },
  routes: billingRoutes,
  byteRoutes: billingByteRoutes,
  http: { bridge: (app, services) => paymentWebhooks(app, services) },
  standIns: [
    {
      name: 'payment-provider',
      env: 'PAYMENT_PROVIDER_URL',
      secrets: ['PAYMENT_WEBHOOK_SECRET'],
      async start({ config, host }) {
        const secret = config.env.PAYMENT_WEBHOOK_SECRET ?? DEV_WEBHOOK_SECRET;
        const s = await startPaymentProviderStandIn({ mongodbUri: config.mongodbUri, host, secret });
        return { value: s.url, stop: () => s.stop() };
      },
    },
  ],
  cli: [
    {
      words: ['credits', 'record-usage'],
      usage: `--account SLUG --product ${PRODUCTS.join('|')} --credits N [--description TEXT]`,
      options: {
        account: { type: 'string' },
        product: { type: 'string' },
        credits: { type: 'string' },
        description: { type: 'string' },
      },
      required: ['account', 'product', 'credits'],
      async run({ values, services }) {
        const { account, product, credits, description } = values;
        if (typeof account !== 'string' || !account) throw new CliUsageError('--account SLUG is required.');
        if (typeof product !== 'string' || !PRODUCTS.includes(product as never)) {
          throw new CliUsageError(`--product must be one of ${PRODUCTS.join(', ')}.`);
        }
        const n = Number(credits);
        if (typeof credits !== 'string' || !Number.isInteger(n) || n < 1) {
          throw new CliUsageError('--credits must be a whole number of at least 1.');
        }
        const entry = await services.recordUsageForSlug(
          account,
          product,
          n,
          typeof description === 'string' ? description : undefined,
        );
        return entryJson(entry);
      },
      describe: (r) => `usage entry ${r.id}: ${r.credits} credits of ${r.product} (balance ${r.balance_after})`,
    },
    {
      words: ['payments', 'complete'],
      usage: '--checkout ID',
      options: { checkout: { type: 'string' } },
      required: ['checkout'],
      async run({ values, services }) {
        if (typeof values.checkout !== 'string' || !values.checkout) throw new CliUsageError('--checkout ID is required.');
        return checkoutJson(await services.completePayment(values.checkout));
      },
      describe: (r) => `checkout ${r.id}: ${r.status}, ${r.credits} credits`,
    },
  ],
});

/** The subgraph alone (schema, SDL) — what composition needs until the registry builds it. */
export function buildBillingSubgraph(services: BillingService) {
  return buildSubgraph({
    name: 'billing',
    resolvers: [BillingResolver],
    createResolver: (cls) => new cls(services),
    scopes: areaScopes('billing'),
  });
}
