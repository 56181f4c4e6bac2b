/**
 * CSV as RFC 4180 writes it (CRLF line ends, a field quoted when it holds `"`, `,`, CR or LF, a
 * quote doubled inside; also when it holds `;` or a tab, the list separators of other locales and
 * of separator-sniffing imports, so such a reader does not split the cell and see a formula start
 * in its second half: RFC 4180 allows any field to be quoted), plus the formula-injection defence spreadsheets need (OWASP "CSV
 * injection"): a cell that starts with `=`, `+`, `-`, `@`, a tab or a CR is prefixed with `'`, so
 * Excel, LibreOffice and Google Sheets show it as text instead of running it. Written by hand: it is
 * these ten lines, and the CSV libraries on npm leave the formula defence to the caller.
 */

const FORMULA_START = /^[=+\-@\t\r]/;
const NEEDS_QUOTES = /[",;\t\r\n]/;

/** One cell: `null`/`undefined` are empty. */
export function csvCell(value: string | null | undefined): string {
  if (value === null || value === undefined) return "";
  const text = FORMULA_START.test(value) ? `'${value}` : value;
  return NEEDS_QUOTES.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/** One record, with its CRLF. */
export function csvRow(cells: readonly (string | null | undefined)[]): string {
  return `${cells.map(csvCell).join(",")}\r\n`;
}
