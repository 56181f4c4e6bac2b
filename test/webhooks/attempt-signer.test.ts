import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { AttemptSigner } from "../../src/webhooks/attempt-signer.js";
import { generateWebhookSecret } from "../../src/webhooks/secrets.js";
import { signatureHeaders } from "../../src/webhooks/signing.js";

describe("AttemptSigner (keys imported once) signs exactly as signatureHeaders", () => {
  it("for one and for two secrets, any id, timestamp and body (UTF-8 included)", () => {
    const current = generateWebhookSecret();
    const previous = generateWebhookSecret();
    const one = new AttemptSigner([current]);
    const two = new AttemptSigner([current, previous]);
    fc.assert(
      fc.property(
        fc.string({ minLength: 1, maxLength: 40 }),
        fc.integer({ min: 0, max: 4_000_000_000 }),
        fc.string({ unit: "grapheme", maxLength: 2000 }),
        (id, ts, body) => {
          expect(one.headers(id, ts, body)).toEqual(signatureHeaders([current], id, ts, body));
          expect(two.headers(id, ts, body)).toEqual(signatureHeaders([current, previous], id, ts, body));
        },
      ),
      { numRuns: 300 },
    );
  });

  it("refuses to sign without a secret", () => {
    expect(() => new AttemptSigner([])).toThrow("no webhook secret");
  });
});
