import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';

/**
 * docs/benchmarks.md has several writers: `npm run bench` writes the whole page, `npm run trials` its
 * "Kill trials" section, and the benches run on their own (data plane, console) their sections. Each
 * keeps the others' parts, so the page always holds the latest run of each (the trials take 35
 * minutes; the bench 4).
 */
export const BENCHMARKS_DOC = path.resolve(__dirname, '..', '..', 'docs', 'benchmarks.md');
export const TRIALS_HEADING = '## Kill trials (`npm run trials`)';

/** The trials section as it stands in the page ('' when there is none). */
export async function trialsSection(doc = BENCHMARKS_DOC): Promise<string> {
  const text = await readFile(doc, 'utf8').catch(() => '');
  const at = text.indexOf(TRIALS_HEADING);
  if (at < 0) return '';
  const next = text.indexOf('\n## ', at + TRIALS_HEADING.length);
  return text.slice(at, next < 0 ? undefined : next + 1).trimEnd();
}

/**
 * The sections of the page that `npm run bench` does not write (the kill trials, the data-plane
 * benches run on their own, the console's): every `## ` section whose heading is not among
 * `written`, in the page's order, so a new run of the bench keeps what other commands wrote.
 */
export async function sectionsBesides(written: string[], doc = BENCHMARKS_DOC): Promise<string> {
  const text = await readFile(doc, 'utf8').catch(() => '');
  const parts = text.split(/\n(?=## )/).slice(1);
  return parts
    .filter((p) => !written.some((h) => p.startsWith(h)))
    .map((p) => p.trimEnd())
    .join('\n\n');
}

/** Replaces (or adds, at the end) the trials section of the page. */
export async function writeTrialsSection(section: string, doc = BENCHMARKS_DOC): Promise<void> {
  const text = await readFile(doc, 'utf8').catch(() => '# Benchmarks\n');
  const old = await trialsSection(doc);
  const body = section.trimEnd();
  const next = old ? text.replace(old, body) : `${text.trimEnd()}\n\n${body}\n`;
  await writeFile(doc, next.endsWith('\n') ? next : `${next}\n`);
}
