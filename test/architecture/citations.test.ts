import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../../core/paths';

/**
 * Docs stand on their own (decision 0193): docs, README and source comments cite
 * docs/contracts.md, a decision or a file, never a contracts file outside the repository nor an
 * issue number, which a reader of the repository cannot open.
 */
export const OUTSIDE_CITATION =
  /CONTRACTS\.md|shared\/design|\b[Ii]ssues? #?\d+|(?:^|[^&\w])#\d+\b|\b[Tt]he issue\b|\bthe issue's\b/;

function trackedFiles(): string[] {
  const out = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '*.ts', '*.md'], {
    cwd: projectRoot(),
    encoding: 'utf8',
  });
  return out.split('\n').filter((f) => f && !f.startsWith('schema/') && f !== 'test/architecture/citations.test.ts');
}

describe('citations stay inside the repository', () => {
  it('no doc or source cites the outside contracts file or an issue number', () => {
    const found: string[] = [];
    for (const file of trackedFiles()) {
      readFileSync(path.join(projectRoot(), file), 'utf8')
        .split('\n')
        .forEach((line, i) => {
          if (OUTSIDE_CITATION.test(line)) found.push(`${file}:${i + 1}: ${line.trim()}`);
        });
    }
    expect(found).toEqual([]);
  });

  it('recognise the forms seen in the tree', () => {
    for (const s of [
      '(CONTRACTS.md)',
      '../shared/design/X',
      '(issue 8, point 2)',
      'Issue 17 asks',
      'issue #20',
      'see #12',
      'the issue fixes it',
    ]) {
      expect(s).toMatch(OUTSIDE_CITATION);
    }
    for (const s of ['docs/contracts.md', 'decision 0015', '&#39;', 'color: #fff', 'an issue tracker']) {
      expect(s).not.toMatch(OUTSIDE_CITATION);
    }
  });
});
