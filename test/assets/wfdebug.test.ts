import { startTestPlatform } from '../support/platform';
it('debug', async () => {
  const t = await startTestPlatform();
  try {
    const { key } = await t.createKey();
    console.log(JSON.stringify((await t.rest('GET', '/api/v1/assets/workflows/catalog', { key })).body));
    console.log(JSON.stringify((await t.rest('POST', '/api/v1/assets/workflows', { key, body: { name: 'flow' } })).body));
  } finally { await t.stop(); }
});
