import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../../core/paths';

/**
 * One name for each thing (decision 0191): `stand-in` in file and folder names, and tests that
 * start a platform, talk to the real MongoDB or Kafka, or load a whole area under `test/<area>/`,
 * never next to a module (a test there is a unit test of that module).
 */

/** A path segment that spells stand-in as one word (`standin`, `foo-standin.ts`), not `standing`. */
export const STANDIN_NAME = /(?:^|[-_.])standin(?:$|[-_.])/i;

/** What makes a test more than a unit test of the module beside it, with the reason. */
export const WIDER_THAN_A_MODULE: [RegExp, string][] = [
  [/startTestPlatform|test\/support\//, 'starts a platform'],
  [/\bconnectMongo\(|from 'kafkajs'/, 'talks to the real MongoDB or Kafka'],
  [/from '(?:\.\.?\/)+index'|from '\.\.?'/, 'loads a whole area (its index.ts)'],
];

function tracked(...patterns: string[]): string[] {
  return execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', ...patterns], {
    cwd: projectRoot(),
    encoding: 'utf8',
  })
    .split('\n')
    .filter(Boolean);
}

/** Why `text` (a test beside a module) belongs under test/<area>/, or null when it is a unit test. */
export function widerThanAModule(text: string): string | null {
  return WIDER_THAN_A_MODULE.find(([re]) => re.test(text))?.[1] ?? null;
}

describe('names and places', () => {
  it('no file or folder spells stand-in as one word', () => {
    const found = tracked().filter((f) => f.split('/').some((segment) => STANDIN_NAME.test(segment)));
    expect(found).toEqual([]);
  });

  it('a test next to a module is a unit test of it', () => {
    const found: string[] = [];
    for (const file of tracked('*.test.ts')) {
      if (file.startsWith('test/') || file.startsWith('bench/')) continue;
      const why = widerThanAModule(readFileSync(path.join(projectRoot(), file), 'utf8'));
      if (why) found.push(`${file}: ${why}`);
    }
    expect(found).toEqual([]);
  });

  it('recognise the forms seen in the tree', () => {
    for (const s of ['standin-control.ts', 'standin', 'payment-provider-standin.ts']) expect(s).toMatch(STANDIN_NAME);
    for (const s of ['stand-in-control.ts', 'account-standing.ts', 'stand-in']) expect(s).not.toMatch(STANDIN_NAME);
    expect(widerThanAModule("import area from './index';")).toMatch(/whole area/);
    expect(widerThanAModule("import { startTestPlatform } from '../support/platform';")).toMatch(/platform/);
    expect(widerThanAModule('const conn = await connectMongo(uri);')).toMatch(/MongoDB/);
    expect(widerThanAModule("import { parse } from './spf-syntax';")).toBeNull();
    expect(widerThanAModule("import { errors } from '../../core/errors';")).toBeNull();
  });
});
