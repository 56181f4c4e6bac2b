import { describe, expect, it } from "vitest";
import {
  canTransition,
  checkTransition,
  IllegalTransitionError,
  isOpen,
  OPEN_STATES,
  TRANSFER_STATES,
  TRANSITIONS,
  type TransferState,
} from "../../src/sender/transfer-states.js";
import { markBroadcast, markExecuted, markFinished, markSigned } from "../../src/sender/transfer-store.js";

const ALLOWED: [TransferState, TransferState][] = [
  ["queued", "signed"],
  ["queued", "broadcast"],
  ["queued", "failed"],
  ["signed", "broadcast"],
  ["signed", "confirmed"],
  ["signed", "failed"],
  ["broadcast", "confirmed"],
  ["broadcast", "failed"],
];
const allowed = (from: string, to: string) => ALLOWED.some(([f, t]) => f === from && t === to);

describe("the transfer state machine", () => {
  it.each(ALLOWED)("allows %s → %s", (from, to) => {
    expect(canTransition(from, to)).toBe(true);
    expect(() => checkTransition(from, to)).not.toThrow();
  });

  it("refuses every other pair of states (no state skips back, final states never change)", () => {
    let refused = 0;
    for (const from of TRANSFER_STATES) {
      for (const to of TRANSFER_STATES) {
        if (allowed(from, to)) continue;
        expect(canTransition(from, to)).toBe(false);
        expect(() => checkTransition(from, to)).toThrow(IllegalTransitionError);
        refused++;
      }
    }
    expect(refused).toBe(TRANSFER_STATES.length ** 2 - ALLOWED.length);
  });

  it("lists exactly the allowed transitions, none out of a final state", () => {
    const listed = TRANSFER_STATES.flatMap((from) => TRANSITIONS[from].map((to) => [from, to]));
    expect(listed.sort()).toEqual([...ALLOWED].sort());
    expect(TRANSITIONS.confirmed).toEqual([]);
    expect(TRANSITIONS.failed).toEqual([]);
  });

  it("refuses unknown states", () => {
    expect(canTransition("sent", "confirmed")).toBe(false);
    expect(() => checkTransition("queued", "sent" as TransferState)).toThrow(IllegalTransitionError);
    expect(() => checkTransition("bogus", "failed")).toThrow(
      /illegal transfer state transition: bogus → failed/,
    );
  });

  it("open states are the non-final ones", () => {
    expect([...OPEN_STATES]).toEqual(["queued", "signed", "broadcast"]);
    expect(TRANSFER_STATES.filter(isOpen)).toEqual([...OPEN_STATES]);
  });

  it("the transfer store refuses an illegal transition before it touches the database", async () => {
    // Any use of the database would throw a TypeError, not IllegalTransitionError.
    const db = {} as never;
    const now = new Date();
    await expect(
      markSigned(db, { intent_id: "tx_1", status: "broadcast" }, { nonce: 1, from: "0x", now }),
    ).rejects.toThrow(IllegalTransitionError);
    await expect(markExecuted(db, { intent_id: "tx_1", status: "confirmed" }, "0x", now)).rejects.toThrow(
      IllegalTransitionError,
    );
    for (const status of ["queued", "confirmed", "failed"] as const) {
      await expect(
        markFinished(
          db,
          { intent_id: "tx_1", status },
          { status: "confirmed", txHash: null, blockNumber: null, reason: null, now },
        ),
      ).rejects.toThrow(IllegalTransitionError);
    }
    await expect(
      markFinished(
        db,
        { intent_id: "tx_1", status: "failed" },
        { status: "failed", txHash: null, blockNumber: null, reason: null, now },
      ),
    ).rejects.toThrow(IllegalTransitionError);
    // signed → broadcast is allowed: it reaches the database (here: none).
    await expect(markBroadcast(db, "tx_1", now)).rejects.toThrow(TypeError);
  });
});
