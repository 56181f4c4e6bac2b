import { describe, expect, it } from "vitest";
import { csvCell, csvRow } from "../../src/lib/csv.js";

// Issue #34 ("also seen in the code"): the CSV export quoted a cell only when it held `"`, `,`, CR
// or LF. A spreadsheet in a locale whose list separator is `;` (most of continental Europe), or one
// that sniffs the separator (LibreOffice's import dialog, Excel's `sep=`-less auto-detection),
// splits an unquoted `a;=HYPERLINK(…)` into two cells, and the second one starts with `=`: the
// formula-injection defence (a leading `'`) only looked at the start of the whole cell.

/**
 * A quote-aware reader of one CRLF-terminated record with a given separator, as a spreadsheet in
 * that locale reads it (the test's own, independent of `src/lib/csv.ts`).
 */
function readRecord(line: string, separator: string): string[] {
  expect(line.endsWith("\r\n")).toBe(true);
  const text = line.slice(0, -2);
  const fields: string[] = [];
  let field = "";
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i] as string;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        field += '"';
        i++;
      } else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"' && field === "") quoted = true;
    else if (c === separator) {
      fields.push(field);
      field = "";
    } else field += c;
  }
  fields.push(field);
  return fields;
}

const FORMULA_START = /^[=+\-@\t\r]/;

const HOSTILE = [
  'a;=HYPERLINK("http://evil.example","click")',
  "order;+1+1",
  "ref;-2+3",
  "x;@SUM(A1)",
  "tab\t=1+1",
  "plain",
  "semi;colon",
  "comma, here",
];

describe("csvCell: cells stay one cell whatever the reader's list separator", () => {
  it("a cell holding `;` is quoted", () => {
    expect(csvCell("a;b")).toBe('"a;b"');
    expect(csvCell("order;=1+1")).toBe('"order;=1+1"');
  });

  it("a cell holding a tab is quoted", () => {
    expect(csvCell("a\tb")).toBe('"a\tb"');
  });

  for (const separator of [",", ";", "\t"]) {
    it(`each cell read with ${JSON.stringify(separator)} as separator is one field, its value, no formula start`, () => {
      for (const value of HOSTILE) {
        const fields = readRecord(csvRow([value]), separator);
        expect(fields, `${JSON.stringify(value)} read with ${JSON.stringify(separator)}`).toEqual([
          FORMULA_START.test(value) ? `'${value}` : value,
        ]);
      }
    });
  }

  it("a row read with the export's `,`: one field per cell, formula starts defused", () => {
    expect(readRecord(csvRow(HOSTILE), ",")).toEqual(
      HOSTILE.map((v) => (FORMULA_START.test(v) ? `'${v}` : v)),
    );
  });

  it('unchanged: plain cells are not quoted, RFC 4180 quoting of `"`, `,`, CR, LF', () => {
    expect(csvCell("plain")).toBe("plain");
    expect(csvCell("1.500000")).toBe("1.500000");
    expect(csvCell('a "b", c')).toBe('"a ""b"", c"');
    expect(csvCell("two\nlines")).toBe('"two\nlines"');
    expect(csvRow(["a", null, "b,c", "d;e"])).toBe('a,,"b,c","d;e"\r\n');
  });
});
