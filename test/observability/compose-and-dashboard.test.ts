import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { load } from 'js-yaml';
import { collectRuntimeMetrics, metricsRegistry } from '../../core/telemetry/metrics';

const root = join(__dirname, '..', '..');
const read = (p: string) => readFileSync(join(root, p), 'utf8');

interface Compose {
  services: Record<string, { command?: string[]; volumes?: string[]; environment?: Record<string, unknown> }>;
}

describe('the compose file, Prometheus config and Grafana dashboard agree with the code', () => {
  const compose = load(read('docker-compose.yml')) as Compose;

  it('scrapes every platform container on its listener, and each exports traces to the collector', () => {
    const prometheus = load(read('infra/observability/prometheus.yml')) as {
      scrape_configs: Array<{ static_configs: Array<{ targets: string[] }> }>;
    };
    const targets = prometheus.scrape_configs.flatMap((j) => j.static_configs.flatMap((s) => s.targets));
    const platform = Object.entries(compose.services).filter(([, s]) => s.command?.[0] === 'start');
    expect(platform.length).toBeGreaterThanOrEqual(10);
    for (const [name, s] of platform) {
      expect(targets.some((t) => t.startsWith(`${name}:`))).toBe(true);
      expect(s.environment).toMatchObject({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://otel-collector:4318', OTEL_SERVICE_NAME: name });
    }
    for (const svc of ['prometheus', 'otel-collector', 'jaeger', 'grafana']) expect(compose.services[svc]).toBeDefined();
  });

  it('mounts config files that exist', () => {
    for (const s of Object.values(compose.services)) {
      for (const v of s.volumes ?? []) {
        if (!v.startsWith('./')) continue;
        expect(existsSync(join(root, v.split(':')[0]))).toBe(true);
      }
    }
  });

  it('charts only metrics the platform exposes', async () => {
    collectRuntimeMetrics();
    const known = new Set((await metricsRegistry.getMetricsAsJSON()).map((m) => m.name));
    const dashboard = read('docs/observability/grafana-dashboard.json');
    const used = new Set(
      [...dashboard.matchAll(/\b(platform_[a-z0-9_]+)/g)].map((m) => m[1].replace(/_(bucket|count|sum)$/, '')),
    );
    expect(used.size).toBeGreaterThan(15);
    expect([...used].filter((n) => !known.has(n))).toEqual([]);
  });
});
