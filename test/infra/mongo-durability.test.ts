import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import mongoose from 'mongoose';
import { ensureMongoWireBuilt, mongoWireJavaArgs } from '../../infra/mongo-wire';
import { portAnswers } from '../../infra/tools';

/**
 * "Nothing lost on a crash": every write the server acknowledged is still there after the server
 * process is killed with SIGKILL and started again on the same H2 file. Runs its own server on a
 * scratch port and file, so the shared one is never disturbed.
 */
const PORT = 27219;
const WRITES = 300;

function startServer(file: string): ChildProcess {
  return spawn('java', mongoWireJavaArgs(PORT, 'h2', file), { stdio: 'ignore' });
}

async function waitForPort(up: boolean, timeoutMs = 30_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while ((await portAnswers(PORT)) !== up) {
    if (Date.now() > end) throw new Error(`port ${PORT} did not ${up ? 'open' : 'close'}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('the MongoDB-wire server (H2 backend)', () => {
  let dir: string;
  let server: ChildProcess | undefined;

  beforeAll(async () => {
    await ensureMongoWireBuilt();
    dir = mkdtempSync(path.join(tmpdir(), 'mongo-durability-'));
  }, 300_000);
  afterAll(() => {
    server?.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  it('keeps every acknowledged write through kill -9', async () => {
    const file = path.join(dir, 'data.mv');
    server = startServer(file);
    await waitForPort(true);
    const uri = `mongodb://127.0.0.1:${PORT}/durability`;
    let conn = await mongoose.createConnection(uri, { serverSelectionTimeoutMS: 10_000 }).asPromise();
    const docs = conn.db!.collection('writes');
    for (let i = 0; i < WRITES; i++) await docs.insertOne({ _id: `w${i}` as never, i });
    await docs.updateOne({ _id: 'w0' as never }, { $set: { touched: true } });
    await conn.close();

    server.kill('SIGKILL');
    await waitForPort(false);
    server = startServer(file);
    await waitForPort(true);

    conn = await mongoose.createConnection(uri, { serverSelectionTimeoutMS: 10_000 }).asPromise();
    const after = conn.db!.collection('writes');
    expect(await after.countDocuments({})).toBe(WRITES);
    expect(await after.findOne({ _id: 'w0' as never })).toMatchObject({ touched: true });
    await conn.close();
  }, 120_000);
});
