/**
 * One CSV cell (RFC 4180 quoting), for every CSV file the area writes (migration reports, object
 * inventory exports). A text cell starting with `=`, `+`, `-`, `@`, tab or CR is prefixed with `'`,
 * so a spreadsheet never reads an object key as a formula (OWASP CSV injection).
 */
export function csvCell(v: unknown): string {
  if (v === null || v === undefined) return '';
  let s = String(v);
  if (typeof v === 'string' && /^[=+\-@\t\r]/.test(s)) s = `'${s}`;
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}
