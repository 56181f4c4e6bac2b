/**
 * A small, safe Markdown → HTML rendering for the merchant guides we write ourselves
 * (docs/merchants): headings (with anchors), paragraphs, fenced code, `-` lists, pipe tables,
 * inline code, **bold** and links. Hand-written because no Markdown renderer is among the
 * dependencies and the guides need only this subset.
 *
 * Safety does not depend on the input: every piece of text is HTML-escaped before any tag is
 * added, raw HTML in the source is shown as text, and a link's target must be an http(s) URL, an
 * in-page anchor or a sibling guide (`name.md`, rewritten by `guideHref`); anything else stays text.
 */

export function escapeHtml(s: string): string {
  return s
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;")
    .replace(/'/g, "&#39;");
}

/** The anchor of a heading, as GitHub spells it: lower case, punctuation dropped, spaces to `-`. */
export function slug(text: string): string {
  return text
    .toLowerCase()
    .replace(/[`*]/g, "")
    .replace(/[^a-z0-9 _-]/g, "")
    .trim()
    .replace(/ /g, "-");
}

const SAFE_HREF = /^(https?:\/\/[^\s"'<>]+|#[a-z0-9_-]+|[a-z0-9-]+\.md(#[a-z0-9_-]+)?)$/;

function link(label: string, href: string, guideHref: (name: string) => string): string {
  if (!SAFE_HREF.test(href)) return escapeHtml(`[${label}](${href})`);
  const target = /^[a-z0-9-]+\.md/.test(href) ? guideHref(href.replace(/\.md/, "")) : href;
  return `<a href="${escapeHtml(target)}">${formatText(label)}</a>`;
}

/** Bold in already plain text (no code spans). */
function formatText(text: string): string {
  return escapeHtml(text).replace(/\*\*(.+?)\*\*/g, "<strong>$1</strong>");
}

function inline(text: string, guideHref: (name: string) => string): string {
  let out = "";
  // Code spans first: nothing inside them is formatted.
  for (const [i, part] of text.split(/(`[^`]+`)/).entries()) {
    if (i % 2 === 1) {
      out += `<code>${escapeHtml(part.slice(1, -1))}</code>`;
      continue;
    }
    let rest = part;
    for (let m = /\[([^\]]+)\]\(([^)\s]+)\)/.exec(rest); m; m = /\[([^\]]+)\]\(([^)\s]+)\)/.exec(rest)) {
      out += formatText(rest.slice(0, m.index)) + link(m[1] ?? "", m[2] ?? "", guideHref);
      rest = rest.slice(m.index + m[0].length);
    }
    out += formatText(rest);
  }
  return out;
}

const cells = (row: string) =>
  row
    .trim()
    .replace(/^\||\|$/g, "")
    .split(/(?<!\\)\|/)
    .map((c) => c.trim());

/** Renders the Markdown subset; `guideHref(name)` is the URL of a sibling guide `name.md`. */
export function markdownToHtml(markdown: string, guideHref: (name: string) => string): string {
  const lines = markdown.replace(/\r\n?/g, "\n").split("\n");
  const html: string[] = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i] ?? "";
    const fence = /^```(\w*)\s*$/.exec(line);
    if (fence) {
      const code: string[] = [];
      for (i++; i < lines.length && !/^```\s*$/.test(lines[i] ?? ""); i++) code.push(lines[i] ?? "");
      i++;
      const lang = fence[1] ? ` class="language-${escapeHtml(fence[1])}"` : "";
      html.push(`<pre><code${lang}>${escapeHtml(code.join("\n"))}</code></pre>`);
      continue;
    }
    const heading = /^(#{1,4})\s+(.*)$/.exec(line);
    if (heading) {
      const level = heading[1]?.length ?? 1;
      const text = heading[2] ?? "";
      html.push(`<h${level} id="${escapeHtml(slug(text))}">${inline(text, guideHref)}</h${level}>`);
      i++;
      continue;
    }
    if (/^\s*\|/.test(line) && /^\s*\|[\s|:-]+\|\s*$/.test(lines[i + 1] ?? "")) {
      const head = cells(line);
      const rows: string[][] = [];
      for (i += 2; i < lines.length && /^\s*\|/.test(lines[i] ?? ""); i++) rows.push(cells(lines[i] ?? ""));
      html.push(
        `<table><thead><tr>${head.map((c) => `<th>${inline(c, guideHref)}</th>`).join("")}</tr></thead><tbody>` +
          rows
            .map(
              (r) =>
                `<tr>${r.map((c) => `<td>${inline(c.replace(/\\\|/g, "|"), guideHref)}</td>`).join("")}</tr>`,
            )
            .join("") +
          "</tbody></table>",
      );
      continue;
    }
    if (/^\s*([-*]|\d+\.)\s+/.test(line)) {
      const ordered = /^\s*\d+\./.test(line);
      const items: string[] = [];
      while (i < lines.length && /^\s*([-*]|\d+\.)\s+/.test(lines[i] ?? "")) {
        let item = (lines[i] ?? "").replace(/^\s*([-*]|\d+\.)\s+/, "");
        // Continuation lines (indented) belong to the item.
        for (i++; i < lines.length && /^\s{2,}\S/.test(lines[i] ?? ""); i++)
          item += ` ${(lines[i] ?? "").trim()}`;
        items.push(`<li>${inline(item, guideHref)}</li>`);
      }
      const tag = ordered ? "ol" : "ul";
      html.push(`<${tag}>${items.join("")}</${tag}>`);
      continue;
    }
    if (line.trim() === "") {
      i++;
      continue;
    }
    const paragraph: string[] = [];
    while (
      i < lines.length &&
      (lines[i] ?? "").trim() !== "" &&
      !/^(```|#{1,4}\s|\s*\||\s*([-*]|\d+\.)\s+)/.test(lines[i] ?? "")
    ) {
      paragraph.push(lines[i] ?? "");
      i++;
    }
    html.push(`<p>${inline(paragraph.join(" "), guideHref)}</p>`);
  }
  return html.join("\n");
}
