import { describe, expect, it } from "vitest";
import { ChainUnavailableError } from "../../src/chains/index.js";
import { codeToStatus, toAppError } from "../../src/http/errors.js";
import { ConcurrentPostingError } from "../../src/ledger/index.js";

// Issue #36 (debts): the one place that maps errors to HTTP knows the faults a request can meet
// below it, and an internal fault's text never reaches the client.

describe("toAppError", () => {
  it("answers a concurrent posting as the bare 500, without the posting's key", () => {
    const err = toAppError(new ConcurrentPostingError("deposit:tx_secretish"), 1024);
    expect(err.code).toBe("INTERNAL_ERROR");
    expect(codeToStatus(err.code)).toBe(500);
    expect(err.message).toBe("Internal server error.");
    expect(JSON.stringify(err.details)).not.toContain("tx_secretish");
  });

  it("answers a chain endpoint's failure under a request as 503 CHAIN_UNAVAILABLE", () => {
    const err = toAppError(new ChainUnavailableError("USDT-ERC20", "eth_call timed out after 10 s"), 1024);
    expect(err.code).toBe("CHAIN_UNAVAILABLE");
    expect(codeToStatus(err.code)).toBe(503);
    expect(err.message).toBe("USDT-ERC20 is not reachable; try again later.");
  });
});
