import { startTestPlatform, uniqueName, type TestPlatform } from '../support/platform';

const A = '/api/v1/assets';

/**
 * A multipart body the parser cannot read is the client's fault: every multipart route (`POST
 * /upload`, `PUT /{id}/replace`, the widget's `POST /assets/widget`) answers 400 in the standard
 * error envelope, never a 500, and keeps nothing of it.
 */
describe('assets: malformed multipart bodies are 400, on every multipart route', () => {
  let t: TestPlatform;
  beforeAll(async () => {
    t = await startTestPlatform();
  });
  afterAll(async () => t.stop());

  const CRLF = '\r\n';
  const part = `--B${CRLF}Content-Disposition: form-data; name="file"; filename="a.txt"${CRLF}Content-Type: text/plain${CRLF}${CRLF}`;
  /** Bodies under `Content-Type: multipart/form-data; boundary=B` that are not a form. */
  const MALFORMED: Record<string, string> = {
    // The fuzzer's case: a part whose header section is not headers and never ends.
    'a part without headers': `--B${CRLF}None--B--${CRLF}`,
    'a body that ends after the first boundary': `--B${CRLF}`,
    'a file part cut before its closing boundary': `${part}some bytes`,
    'a part header line without a colon': `--B${CRLF}Content-Disposition form-data${CRLF}${CRLF}x${CRLF}--B--${CRLF}`,
    'no boundary delimiter at all': 'just some text',
  };

  const send = (method: string, path: string, headers: Record<string, string>, body: string) =>
    fetch(`${t.bridgeUrl}${path}`, {
      method,
      headers: { 'content-type': 'multipart/form-data; boundary=B', ...headers },
      body,
    });

  /** Each refusal as `[what, status, envelope]`, so one failure shows every route's answer. */
  const seen: [string, number, unknown][] = [];
  const refused = async (res: Response, what: string) => {
    const body = (await res.json()) as any;
    seen.push([what, res.status, { success: body.success, code: body.error?.code }]);
    expect(body.error).toEqual({ code: body.error?.code, message: expect.any(String), details: expect.any(Object) });
  };

  it('POST /upload, PUT /{id}/replace (a missing and an existing asset) and the widget answer 400', async () => {
    const { key } = await t.createKey();
    const auth = { authorization: `Bearer ${key}` };
    const fd = new FormData();
    fd.append('key', uniqueName('file'));
    fd.append('file', new Blob([Buffer.from('hello')]), 'hello.txt');
    const made = await fetch(`${t.bridgeUrl}${A}/upload`, { method: 'POST', headers: auth, body: fd });
    expect(made.status).toBe(201);
    const asset = ((await made.json()) as any).data as { id: string; revision: number };
    const cap = (await t.rest('POST', `${A}/upload-capabilities`, { key, body: {} })).body.data as { token: string };

    for (const [what, body] of Object.entries(MALFORMED)) {
      await refused(await send('POST', `${A}/upload`, auth, body), `upload: ${what}`);
      // The fuzzer's request: an id that names no asset, If-Match: *.
      await refused(await send('PUT', `${A}/%5DQZ/replace`, { ...auth, 'if-match': '*' }, body), `replace: ${what}`);
      await refused(
        await send('PUT', `${A}/${asset.id}/replace`, { ...auth, 'if-match': `"${asset.revision}"` }, body),
        `replace of an asset: ${what}`,
      );
      await refused(await send('POST', '/assets/widget', { 'x-upload-capability': cap.token }, body), `widget: ${what}`);
    }

    expect(seen).toEqual(seen.map(([what]) => [what, 400, { success: false, code: 'validation_failed' }]));

    // Nothing was kept: the one asset, at its first revision.
    const list = await t.rest('GET', A, { key });
    expect(list.body.data.assets.map((a: any) => [a.id, a.revision])).toEqual([[asset.id, asset.revision]]);
  });
});
