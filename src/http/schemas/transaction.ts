import { Type } from "@sinclair/typebox";
import { CURRENCY_TYPES } from "../../domain/currency.js";
import { TRANSACTION_STATUSES, TRANSACTION_TYPES } from "../../domain/transaction.js";

/** A string enum with its literal union as the static type. */
export const literals = <const T extends readonly string[]>(values: T) =>
  Type.Unsafe<T[number]>({ type: "string", enum: [...values] });
export const nullable = <T extends Parameters<typeof Type.Union>[0][number]>(t: T) =>
  Type.Union([t, Type.Null()]);

export const CurrencyTypeSchema = literals(CURRENCY_TYPES);
export const TransactionTypeSchema = literals(TRANSACTION_TYPES);
export const TransactionStatusSchema = literals(TRANSACTION_STATUSES);

/** The transaction object (SPEC §2.2), as `presentTransaction` builds it. Amounts in USDT. */
export const TransactionSchema = Type.Object({
  type: TransactionTypeSchema,
  transactionId: Type.String(),
  id: Type.String({ description: "Same value as transactionId" }),
  clientId: Type.String({ description: "The merchant's identifier" }),
  amount: Type.Number(),
  fee: Type.Number(),
  netAmount: Type.Number(),
  actualBalance: nullable(Type.Number({ description: "On-chain balance at detection; deposits only" })),
  currencyType: CurrencyTypeSchema,
  network: CurrencyTypeSchema,
  status: TransactionStatusSchema,
  createdAt: Type.String({ format: "date-time" }),
  updatedAt: Type.String({ format: "date-time" }),
  confirmedAt: nullable(Type.String({ format: "date-time" })),
  blockchainTxHash: nullable(Type.String()),
  walletAddress: nullable(Type.String()),
  orderId: nullable(Type.String()),
  reference: nullable(Type.String()),
  externalUserId: nullable(Type.String()),
  checkoutSessionId: nullable(Type.String()),
});
