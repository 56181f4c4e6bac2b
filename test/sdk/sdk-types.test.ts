import { describe, expectTypeOf, it } from "vitest";
import type {
  BalanceEntry,
  CheckoutSession,
  Page,
  Payout,
  Stablegate,
  Transaction,
  ValidationError,
  Wallet,
  WebhookEvent,
  WebhookEventRecord,
  Withdrawal,
} from "../../packages/sdk/src/index.js";
import type { CurrencyType } from "../../src/domain/currency.js";

// Checked by `npm run typecheck` (tsc reads test/): the SDK's types come from the generated
// operations, and a change of the document that turned a body into any/unknown/never, or dropped a
// field a merchant reads, fails here instead of in a merchant's build.
describe("SDK types", () => {
  it("resources have real types, not any/unknown/never", () => {
    for (const check of [
      expectTypeOf<CheckoutSession>(),
      expectTypeOf<Wallet>(),
      expectTypeOf<Withdrawal>(),
      expectTypeOf<Payout>(),
      expectTypeOf<BalanceEntry>(),
      expectTypeOf<Transaction>(),
      expectTypeOf<WebhookEventRecord>(),
      expectTypeOf<WebhookEvent>(),
    ]) {
      check.not.toBeAny();
      check.not.toBeUnknown();
      check.not.toBeNever();
    }
    expectTypeOf<CheckoutSession["walletAddress"]>().toEqualTypeOf<string>();
    expectTypeOf<CheckoutSession["amount"]>().toEqualTypeOf<number>();
    expectTypeOf<Withdrawal["walletAddress"]>().toEqualTypeOf<string>();
    expectTypeOf<Withdrawal["rejectionReason"]>().toEqualTypeOf<string | null>();
    expectTypeOf<Payout["netAmount"]>().toEqualTypeOf<number>();
    expectTypeOf<Transaction["id"]>().toEqualTypeOf<string>();
    expectTypeOf<BalanceEntry["available"]>().toEqualTypeOf<number>();
    expectTypeOf<WebhookEvent["data"]["transactionId"]>().toEqualTypeOf<string>();
    expectTypeOf<ValidationError["fields"]>().toEqualTypeOf<{ field: string; message: string }[]>();
  });

  it("methods take and return those types", () => {
    expectTypeOf<
      Stablegate["checkoutSessions"]["create"]
    >().returns.resolves.toEqualTypeOf<CheckoutSession>();
    expectTypeOf<Stablegate["withdrawals"]["list"]>().returns.resolves.toEqualTypeOf<Page<Withdrawal>>();
    expectTypeOf<Stablegate["transactions"]["iterate"]>().returns.toEqualTypeOf<
      AsyncGenerator<Transaction, void, undefined>
    >();
    expectTypeOf<Stablegate["payouts"]["get"]>().returns.resolves.toEqualTypeOf<Payout>();
    expectTypeOf<Stablegate["webhooks"]["verify"]>().returns.resolves.toEqualTypeOf<WebhookEvent>();
    // The registry's currency types, through the generated OpenAPI enum (src/domain/currency.ts).
    expectTypeOf<
      Parameters<Stablegate["checkoutSessions"]["create"]>[0]["currencyType"]
    >().toEqualTypeOf<CurrencyType>();
  });
});
