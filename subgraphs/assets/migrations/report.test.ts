import { itemIdOf } from './migrations';
import { csvCell, reportCsv } from './report';
import type { MigrationReportType } from './types';

describe('migration report', () => {
  it('quotes CSV cells per RFC 4180 and defuses formulas', () => {
    expect(csvCell(null)).toBe('');
    expect(csvCell(12)).toBe('12');
    expect(csvCell('a,b')).toBe('"a,b"');
    expect(csvCell('say "hi"')).toBe('"say ""hi"""');
    expect(csvCell('line\nbreak')).toBe('"line\nbreak"');
    expect(csvCell('=HYPERLINK("x")')).toBe(`"'=HYPERLINK(""x"")"`);
    expect(csvCell('-2+3')).toBe("'-2+3");
    expect(csvCell('@sum')).toBe("'@sum");
  });

  it('writes a header and one CRLF line per item', () => {
    const r = {
      migration: {} as MigrationReportType['migration'],
      items: [
        {
          id: 'i1',
          sourceKey: 'a,b.txt',
          key: 'a,b.txt',
          status: 'copied',
          size: 3,
          sha256: 'ab',
          sourceEtag: null,
          sourceSha256: null,
          assetId: 'x',
          attempts: 1,
          errorCode: null,
          errorMessage: null,
          copiedAt: new Date('2026-01-01T00:00:00Z'),
        },
      ],
    };
    expect(reportCsv(r).split('\r\n')).toEqual([
      'item_id,source_key,key,status,size,sha256,source_etag,asset_id,attempts,error_code,error_message,copied_at',
      'i1,"a,b.txt","a,b.txt",copied,3,ab,,x,1,,,2026-01-01T00:00:00.000Z',
      '',
    ]);
  });

  it('derives one stable item id per migration and source key', () => {
    expect(itemIdOf('m', 'k')).toBe(itemIdOf('m', 'k'));
    expect(itemIdOf('m', 'k')).not.toBe(itemIdOf('m', 'k2'));
    expect(itemIdOf('m', 'k')).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
  });
});
