import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import type { TestPlatform } from '../support/platform';

export const PREFIX = '/api/v1/billing/ai-credits';
export const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[1-8][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

const BIN = path.join(__dirname, '..', '..', 'bin', 'platform.js');

/** The error envelope with this code. */
export const errorBody = (code: string) => ({
  success: false,
  error: { code, message: expect.any(String), details: expect.any(Object) },
});

/** Runs the built CLI against this test platform's database; with `--json`, parses the last line. */
export async function cli(t: TestPlatform, args: string[]): Promise<{ code: number; json: any; stderr: string }> {
  const env = { ...process.env, MONGODB_URI: `mongodb://127.0.0.1:27017/${t.platform.conn.name}`, LOG_LEVEL: 'silent' };
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [BIN, ...args, '--json'], { env });
    return { code: 0, json: JSON.parse(stdout.trim().split('\n').pop()!), stderr };
  } catch (e) {
    const err = e as { code: number; stderr: string };
    return { code: err.code, json: null, stderr: err.stderr };
  }
}

/** A quote and its checkout on the stand-in; returns the checkout as the API shows it. */
export async function openCheckout(t: TestPlatform, key: string, credits: number, idempotencyKey: string) {
  const quote = await t.rest('POST', `${PREFIX}/top-ups/quote`, { key, body: { credits, currency: 'USD' } });
  if (quote.status !== 201) throw new Error(`quote: ${quote.status} ${JSON.stringify(quote.body)}`);
  const res = await t.rest('POST', `${PREFIX}/top-ups/checkout`, {
    key,
    body: { quote_id: quote.body.data.id, idempotency_key: idempotencyKey, provider: 'test' },
  });
  if (res.status !== 201) throw new Error(`checkout: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.data;
}
