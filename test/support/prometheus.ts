/**
 * A strict reader of the Prometheus text exposition format (0.0.4), enough for tests: `# HELP` and
 * `# TYPE` lines, samples `name{label="value",…} value`, escaped label values. Any other line is an
 * error, so a test that scrapes proves the text parses. (The npm parser tried first,
 * parse-prometheus-text-format 1.1.1, drops the labels of histogram series.)
 */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+-?\d+)?$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?\s*/y;

export function parsePrometheusText(text: string): { samples: Sample[]; types: Map<string, string> } {
  const samples: Sample[] = [];
  const types = new Map<string, string>();
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    if (line.startsWith('#')) {
      const m = /^# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) ?(.*)$/.exec(line);
      if (!m) throw new Error(`bad comment line: ${line}`);
      if (m[1] === 'TYPE') {
        if (!['counter', 'gauge', 'histogram', 'summary', 'untyped'].includes(m[3])) throw new Error(`bad type: ${line}`);
        types.set(m[2], m[3]);
      }
      continue;
    }
    const m = SAMPLE.exec(line);
    if (!m) throw new Error(`bad sample line: ${line}`);
    const labels: Record<string, string> = {};
    const body = m[2] ?? '';
    LABEL.lastIndex = 0;
    while (LABEL.lastIndex < body.length) {
      const at = LABEL.lastIndex;
      const l = LABEL.exec(body);
      if (!l || l.index !== at) throw new Error(`bad labels: ${line}`);
      labels[l[1]] = l[2].replace(/\\n/g, '\n').replace(/\\"/g, '"').replace(/\\\\/g, '\\');
    }
    const value = m[3] === '+Inf' ? Infinity : m[3] === '-Inf' ? -Infinity : Number(m[3]);
    if (Number.isNaN(value) && m[3] !== 'NaN') throw new Error(`bad value: ${line}`);
    samples.push({ name: m[1], labels, value });
  }
  return { samples, types };
}

/** Fetches `/metrics` and parses it (throws when it does not parse). */
export async function scrape(baseUrl: string): Promise<Scrape> {
  const res = await fetch(`${baseUrl}/metrics`);
  if (res.status !== 200) throw new Error(`/metrics answered ${res.status}`);
  const parsed = parsePrometheusText(await res.text());
  return new Scrape(parsed.samples, parsed.types, res.headers.get('content-type') ?? '');
}

export class Scrape {
  constructor(
    readonly samples: Sample[],
    readonly types: Map<string, string>,
    readonly contentType: string,
  ) {}

  private matching(name: string, labels: Record<string, string>): Sample[] {
    return this.samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  }

  /** Sum of the samples of `name` whose labels include `labels` (a histogram's count: `name_count`). */
  value(name: string, labels: Record<string, string> = {}): number {
    return this.matching(name, labels).reduce((s, m) => s + m.value, 0);
  }

  /** Observations of a histogram whose labels include `labels`. */
  count(name: string, labels: Record<string, string> = {}): number {
    return this.value(`${name}_count`, labels);
  }

  /** Label sets (series) of one metric name. */
  series(name: string): Array<Record<string, string>> {
    return this.matching(name, {}).map((s) => s.labels);
  }

  /** Number of series per family (histograms: by their `_count` series). */
  seriesCounts(): Map<string, number> {
    const out = new Map<string, number>();
    for (const s of this.samples) {
      if (s.name.endsWith('_bucket') || s.name.endsWith('_sum')) continue;
      out.set(s.name, (out.get(s.name) ?? 0) + 1);
    }
    return out;
  }
}
