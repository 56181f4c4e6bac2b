import {
  type DatabaseConnection,
  type Driver,
  Kysely,
  type KyselyConfig,
  PostgresDialect,
  type PostgresDialectConfig,
  PostgresDriver,
  type Transaction,
  type TransactionBuilder,
} from "kysely";
import {
  CommitOutcomeUnknownError,
  commitOutcomeUnknown,
  DEFAULT_RETRY_POLICY,
  type RetryPolicy,
  retryTransient,
} from "./transient.js";

/**
 * Kysely whose `db.transaction().execute(fn)` runs `fn` again, in a new transaction, when the
 * attempt failed with a transient fault before its COMMIT was sent (BEGIN failed, or `fn` or one of
 * its statements failed: the transaction rolled back, so nothing of it stands). Every transaction
 * of the code base gets the retries without its call site changing; `Transaction` objects
 * (`trx.isTransaction`, nesting refused) are Kysely's own.
 *
 * A callback that does something outside the database that must not happen twice (an HTTP call,
 * an in-memory counter) takes `transactionOnce(db)` instead, or moves that effect after the commit.
 * `withPlugin`/`withSchema`/`withTables`/`connection()` return Kysely's plain class: no retries
 * there (migrations hold their advisory lock on one connection and must not move to another).
 */
export class RetryingKysely<DB> extends Kysely<DB> {
  readonly #policy: RetryPolicy;

  constructor(config: KyselyConfig, policy: RetryPolicy = DEFAULT_RETRY_POLICY) {
    super(config);
    this.#policy = policy;
  }

  override transaction(): TransactionBuilder<DB> {
    return retrying(super.transaction(), this.#policy);
  }

  /** Kysely's builder: one attempt, whatever happens. */
  transactionOnce(): TransactionBuilder<DB> {
    return super.transaction();
  }
}

/**
 * `db.transaction()` without the retries, for a callback that is not safe to run twice. Any other
 * `Kysely` (a test's own, a `connection()`) never retries anyway.
 */
export function transactionOnce<DB>(db: Kysely<DB>): TransactionBuilder<DB> {
  return db instanceof RetryingKysely ? (db as RetryingKysely<DB>).transactionOnce() : db.transaction();
}

/**
 * Kysely's own builder (its settings and connection handling untouched) with `execute` wrapped,
 * and the setters too, so that `setIsolationLevel(...)` keeps the retries.
 */
function retrying<DB>(builder: TransactionBuilder<DB>, policy: RetryPolicy): TransactionBuilder<DB> {
  const execute = builder.execute.bind(builder);
  const setAccessMode = builder.setAccessMode.bind(builder);
  const setIsolationLevel = builder.setIsolationLevel.bind(builder);
  return Object.assign(builder, {
    execute: <T>(callback: (trx: Transaction<DB>) => Promise<T>) =>
      retryTransient(() => execute(callback), policy),
    setAccessMode: (...args: Parameters<typeof setAccessMode>) => retrying(setAccessMode(...args), policy),
    setIsolationLevel: (...args: Parameters<typeof setIsolationLevel>) =>
      retrying(setIsolationLevel(...args), policy),
  });
}

/**
 * PostgresDialect whose driver tells a COMMIT that may have happened from a transaction that
 * surely did not: a COMMIT whose connection broke throws `CommitOutcomeUnknownError`, which the
 * retries never repeat. Used for PostgreSQL and PGlite alike (PGlite never loses its connection).
 */
export class CommitAwarePostgresDialect extends PostgresDialect {
  readonly #config: PostgresDialectConfig;

  constructor(config: PostgresDialectConfig) {
    super(config);
    this.#config = config;
  }

  override createDriver(): Driver {
    return new CommitAwarePostgresDriver(this.#config);
  }
}

class CommitAwarePostgresDriver extends PostgresDriver {
  /** Connections whose COMMIT just failed with an unknown outcome, until Kysely's ROLLBACK after it. */
  readonly #commitFailed = new WeakMap<DatabaseConnection, CommitOutcomeUnknownError>();

  override async commitTransaction(connection: DatabaseConnection): Promise<void> {
    try {
      await super.commitTransaction(connection);
    } catch (err) {
      if (!commitOutcomeUnknown(err)) throw err;
      const unknown = new CommitOutcomeUnknownError(err);
      this.#commitFailed.set(connection, unknown);
      throw unknown;
    }
  }

  /**
   * Kysely rolls back after any failure, a failed COMMIT included, and throws what the ROLLBACK
   * throws in place of the first error. On a broken connection the ROLLBACK fails too ("not
   * queryable"), which would hide that the COMMIT's outcome is unknown: that error is kept.
   */
  override async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    const commitFailed = this.#commitFailed.get(connection);
    this.#commitFailed.delete(connection);
    try {
      await super.rollbackTransaction(connection);
    } catch (err) {
      throw commitFailed ?? err;
    }
  }
}
