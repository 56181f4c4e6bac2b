import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { LANGUAGE_NAMES, LANGUAGES, messages, placeholders } from "../../src/pay/messages.js";

// The hosted page's message files (src/pay/messages/*.json), read as a translator leaves them: one
// file per language, every key of en.json and no other, no empty text, the same placeholders.
const DIR = path.resolve("src/pay/messages");
const read = (file: string) =>
  JSON.parse(readFileSync(path.join(DIR, file), "utf8")) as Record<string, unknown>;
const en = read("en.json");

describe("message files of the hosted page", () => {
  it("there is exactly one file per supported language, and eight languages", () => {
    const files = readdirSync(DIR)
      .filter((f) => f.endsWith(".json"))
      .sort();
    expect(files).toEqual([...LANGUAGES].map((l) => `${l}.json`).sort());
    expect([...LANGUAGES].sort()).toEqual(["de", "en", "es", "fr", "pt", "ru", "tr", "zh"]);
    for (const l of LANGUAGES) expect(LANGUAGE_NAMES[l]).toBeTruthy();
  });

  for (const lang of LANGUAGES) {
    it(`${lang}.json: every key of en.json, no other, non-empty strings, the same placeholders`, () => {
      const file = read(`${lang}.json`);
      expect(Object.keys(file).sort(), "missing or extra keys").toEqual(Object.keys(en).sort());
      for (const [key, reference] of Object.entries(en)) {
        const text = file[key];
        expect(typeof text, `${lang}.${key}`).toBe("string");
        expect((text as string).trim().length, `${lang}.${key} is empty`).toBeGreaterThan(0);
        expect(placeholders(text as string), `${lang}.${key} placeholders`).toEqual(
          placeholders(reference as string),
        );
      }
      // What the page uses is what the file says.
      expect(messages(lang)).toEqual(file);
    });
  }

  it("the checker itself notices a missing key, an extra key and a placeholder mismatch", () => {
    const keysOf = (o: object) => Object.keys(o).sort();
    const { title: _missing, ...withoutTitle } = en;
    expect(keysOf(withoutTitle)).not.toEqual(keysOf(en));
    expect(keysOf({ ...en, extra: "x" })).not.toEqual(keysOf(en));
    expect(placeholders("Zurück zu {shop}")).not.toEqual(placeholders(en.backToMerchant as string));
    expect(placeholders("{merchant} … {merchant}")).toEqual(["merchant"]);
  });
});
