import { productionProblems } from '../../app/areas';
import { ProductionConfigError, startPlatform } from '../../app/platform';
import { loadConfig } from '../../core/config';
import { KEY_NAMES } from '../../core/keys';

/** Every outside system named, every shared secret set: what a production start needs. */
const COMPLETE = {
  PAYMENT_PROVIDER_URL: 'https://payments.example',
  PAYMENT_WEBHOOK_SECRET: 'whsec_cHJvZHVjdGlvbi1zZWNyZXQtdmFsdWU=',
  COMMERCE_PLATFORM_URL: 'https://commerce.example',
  COMMERCE_WEBHOOK_SECRET: 'whsec_Y29tbWVyY2UtcHJvZHVjdGlvbi1zZWNyZXQ=',
  MAIL_SMTP_URL: 'smtp://mail.example:587',
  MAIL_DNS_SERVERS: '1.1.1.1',
  ASSETS_DNS_SERVERS: '1.1.1.1',
  PUBLISHER_DNS_SERVERS: '1.1.1.1',
};

describe('no development secrets and no stand-ins in production', () => {
  it('names every unset outside-system variable and every secret with a public development default', () => {
    expect(productionProblems(COMPLETE)).toEqual([]);
    const problems = productionProblems({ ...COMPLETE, PAYMENT_WEBHOOK_SECRET: undefined, COMMERCE_PLATFORM_URL: '' });
    expect(problems).toHaveLength(2);
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(
          /^COMMERCE_PLATFORM_URL must be set when NODE_ENV=production \(the .* stand-in never runs in production\)$/,
        ),
        'PAYMENT_WEBHOOK_SECRET must be set when NODE_ENV=production (its development default is public)',
      ]),
    );
    expect(productionProblems({})).toEqual(
      expect.arrayContaining([
        expect.stringContaining('PAYMENT_PROVIDER_URL must be set'),
        expect.stringContaining('PAYMENT_WEBHOOK_SECRET must be set'),
        expect.stringContaining('COMMERCE_WEBHOOK_SECRET must be set'),
        expect.stringContaining('MAIL_SMTP_URL must be set'),
      ]),
    );
  });

  it('a production start without the payment webhook secret refuses, naming it, before anything starts', async () => {
    const keys = {
      INTERNAL_SIGNING_KEY: 'a'.repeat(64),
      SECRET_ENCRYPTION_KEY: 'b'.repeat(64),
      CURSOR_SIGNING_KEY: 'c'.repeat(64),
    };
    const env = { ...process.env, ...keys, ...COMPLETE, NODE_ENV: 'production', PAYMENT_WEBHOOK_SECRET: undefined };
    const config = loadConfig(env as NodeJS.ProcessEnv);
    const started = startPlatform({ config, bridgePort: 0, routerPort: 0, cdnPort: 0, serveSubgraphs: false });
    await expect(started).rejects.toThrow(ProductionConfigError);
    await expect(started).rejects.toThrow(/^PAYMENT_WEBHOOK_SECRET must be set when NODE_ENV=production/);
    // With no payment settings at all, the stand-in is not started either: the start is refused.
    const bare = loadConfig({ ...env, PAYMENT_PROVIDER_URL: undefined } as NodeJS.ProcessEnv);
    await expect(startPlatform({ config: bare, bridgePort: 0, routerPort: 0, cdnPort: 0 })).rejects.toThrow(
      /^PAYMENT_PROVIDER_URL must be set when NODE_ENV=production \(the payment-provider stand-in never runs in production\)/,
    );
  });

  it('a refused start names every missing outside system and secret in one message', async () => {
    const keys = {
      INTERNAL_SIGNING_KEY: 'a'.repeat(64),
      SECRET_ENCRYPTION_KEY: 'b'.repeat(64),
      CURSOR_SIGNING_KEY: 'c'.repeat(64),
    };
    const env = { ...process.env, ...keys, ...COMPLETE, NODE_ENV: 'production', MAIL_SMTP_URL: '', MAIL_DNS_SERVERS: undefined };
    const config = loadConfig({ ...env, COMMERCE_WEBHOOK_SECRET: undefined } as NodeJS.ProcessEnv);
    const started = startPlatform({ config, bridgePort: 0, routerPort: 0, cdnPort: 0, serveSubgraphs: false });
    await expect(started).rejects.toThrow(ProductionConfigError);
    const message = await started.catch((e: Error) => e.message);
    for (const name of ['MAIL_SMTP_URL', 'MAIL_DNS_SERVERS', 'COMMERCE_WEBHOOK_SECRET']) {
      expect(message).toContain(`${name} must be set when NODE_ENV=production`);
    }
  });

  it('several missing keys are named in one message too', () => {
    const env = { ...COMPLETE, NODE_ENV: 'production', SECRET_ENCRYPTION_KEY: 'b'.repeat(64) };
    expect(() => loadConfig(env as NodeJS.ProcessEnv)).toThrow(
      /^INTERNAL_SIGNING_KEY must be set when NODE_ENV=production .*; CURSOR_SIGNING_KEY must be set when NODE_ENV=production/,
    );
  });

  it('a production start with nothing named lists the keys and the outside systems together', async () => {
    const saved = { ...process.env };
    for (const name of [...KEY_NAMES, ...Object.keys(COMPLETE)]) delete process.env[name];
    process.env.NODE_ENV = 'production';
    try {
      const message = await startPlatform({ bridgePort: 0, routerPort: 0, cdnPort: 0, serveSubgraphs: false }).then(
        () => 'started',
        (e: Error) => (e instanceof ProductionConfigError ? e.message : `${e.constructor.name}: ${e.message}`),
      );
      for (const name of [...KEY_NAMES, ...Object.keys(COMPLETE)]) {
        expect(message).toContain(`${name} must be set when NODE_ENV=production`);
      }
    } finally {
      process.env = saved;
    }
  });
});
