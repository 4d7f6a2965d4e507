import { SpanKind } from '@opentelemetry/api';
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace-base';
import { randomBytes } from 'node:crypto';
import mongoose, { Schema } from 'mongoose';
import { register } from 'prom-client';
import { loadConfig } from '../../core/config';
import { connectMongo } from '../../core/mongo';
import { mongoCommandsSent } from '../../core/telemetry/mongo';
import { initTracing, tracer } from '../../core/telemetry/tracing';

const exporter = new InMemorySpanExporter();
initTracing({ exporter, ratio: 1 });

/**
 * MongoDB command telemetry without the driver's command monitoring (decision 0252): every command
 * is counted, timed into the histogram and, inside a recorded span, traced, while the connection
 * never decodes a reply twice for a monitoring event. Real MongoDB-wire server.
 */
describe('MongoDB command telemetry', () => {
  let conn: mongoose.Connection;
  const db = `t_mongotel_${randomBytes(4).toString('hex')}`;
  beforeAll(async () => {
    conn = await connectMongo(loadConfig(process.env).mongodbUri.replace(/\/[^/?]*(\?|$)/, `/${db}$1`));
  });
  afterAll(async () => {
    await conn.dropDatabase();
    await conn.close();
  });

  const finds = async () =>
    (await register.getSingleMetric('platform_mongodb_command_duration_seconds')!.get()).values.find(
      (v) =>
        (v as { metricName?: string }).metricName?.endsWith('_count') && v.labels.command === 'find' && v.labels.outcome === 'ok',
    )?.value ?? 0;

  it('counts and times each command with command monitoring off', async () => {
    expect(conn.getClient().options.monitorCommands).toBe(false);
    const Thing = conn.model('Thing', new Schema({ _id: String, n: Number }, { versionKey: false }), 'things');
    await Thing.insertMany([{ _id: 'a', n: 1 }]);
    const sent0 = mongoCommandsSent();
    const finds0 = await finds();
    expect(await Thing.findById('a').lean()).toEqual({ _id: 'a', n: 1 });
    expect(await Thing.find({ n: 1 }).lean()).toHaveLength(1);
    expect(mongoCommandsSent() - sent0).toBe(2);
    expect((await finds()) - finds0).toBe(2);
  });

  it('opens a CLIENT span per command inside a recorded span, parented by it', async () => {
    const Thing = conn.model('Thing');
    exporter.reset();
    await tracer().startActiveSpan('in-request', async (span) => {
      await Thing.findById('a').lean();
      span.end();
    });
    const spans = exporter.getFinishedSpans();
    const find = spans.find((s) => s.name === 'mongodb.find');
    const inRequest = spans.find((s) => s.name === 'in-request');
    expect(find?.kind).toBe(SpanKind.CLIENT);
    expect(find?.attributes).toMatchObject({ 'db.system.name': 'mongodb', 'db.namespace': db, 'db.operation.name': 'find' });
    expect(find?.spanContext().traceId).toBe(inRequest?.spanContext().traceId);
  });

  it('counts a command the server refuses as an error, as command monitoring did', async () => {
    const failed = async () =>
      (await register.getSingleMetric('platform_mongodb_command_duration_seconds')!.get()).values.find(
        (v) =>
          (v as { metricName?: string }).metricName?.endsWith('_count') &&
          v.labels.command === 'noSuchCommand' &&
          v.labels.outcome === 'error',
      )?.value ?? 0;
    const before = await failed();
    await expect(conn.db!.command({ noSuchCommand: 1 })).rejects.toThrow();
    expect((await failed()) - before).toBe(1);
  });
});
