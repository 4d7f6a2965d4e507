import type { MigrationItemType, MigrationReportType } from './types';
import { csvCell } from '../csv';

/** Columns of the CSV report, in order. */
export const REPORT_COLUMNS = [
  'item_id',
  'source_key',
  'key',
  'status',
  'size',
  'sha256',
  'source_etag',
  'asset_id',
  'attempts',
  'error_code',
  'error_message',
  'copied_at',
] as const;

const row = (i: MigrationItemType): unknown[] => [
  i.id,
  i.sourceKey,
  i.key,
  i.status,
  i.size,
  i.sha256,
  i.sourceEtag,
  i.assetId,
  i.attempts,
  i.errorCode,
  i.errorMessage,
  i.copiedAt?.toISOString() ?? null,
];

/** The area's one CSV cell writer (neutralises formulas). */
export { csvCell };

export function reportCsv(r: MigrationReportType): string {
  const lines = [REPORT_COLUMNS.join(','), ...r.items.map((i) => row(i).map(csvCell).join(','))];
  return `${lines.join('\r\n')}\r\n`;
}

/** The raw JSON report (snake_case, as the REST names read). */
export function reportJson(r: MigrationReportType): Record<string, unknown> {
  const m = r.migration;
  return {
    migration: {
      id: m.id,
      status: m.status,
      connection_id: m.connectionId,
      bucket: m.bucket,
      folder: m.folder,
      counts: m.counts,
      error_code: m.errorCode,
      error_message: m.errorMessage,
      created_at: m.createdAt,
      started_at: m.startedAt,
      finished_at: m.finishedAt,
    },
    items: r.items.map((i) => Object.fromEntries(REPORT_COLUMNS.map((c, n) => [c, row(i)[n]]))),
  };
}
