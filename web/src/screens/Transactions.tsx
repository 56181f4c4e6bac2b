import { keepPreviousData, useMutation, useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { useSearchParams } from "react-router-dom";
import { getFile, getList } from "../api/client";
import { type SortOrder, TRANSACTION_STATUSES, TRANSACTION_TYPES, type Transaction } from "../api/types";
import { ActionButton, Form, SubmitButton } from "../components/Form";
import { useHeldDecision } from "../components/HeldDecision";
import { TransactionTable } from "../components/TransactionTable";
import { Empty, ErrorNotice, Field, Loading, Notice, PageHeader, Pager } from "../components/ui";
import { useCurrencies } from "../lib/currencies";
import { download } from "../lib/format";
import { useCan, useEnvKey, useSession } from "../session";

const SORTS = [
  { value: "createdAt", label: "Created" },
  { value: "amount", label: "Amount" },
  { value: "status", label: "Status" },
  { value: "updatedAt", label: "Updated" },
  { value: "confirmedAt", label: "Confirmed" },
];
/** The list order in words, newest (or largest) first. */
const ORDERS = { desc: "Newest / largest first", asc: "Oldest / smallest first" } satisfies Record<
  SortOrder,
  string
>;
const FILTER_KEYS = [
  "type",
  "status",
  "currencyType",
  "search",
  "from",
  "to",
  "sortBy",
  "order",
  "page",
] as const;

/** A date input's day as the API's `from` (start of that day) or `to` (start of the next day), local time. */
function dayBound(day: string, next: boolean): string | undefined {
  if (!day) return undefined;
  const d = new Date(`${day}T00:00:00`);
  if (Number.isNaN(d.getTime())) return undefined;
  if (next) d.setDate(d.getDate() + 1);
  return d.toISOString();
}

export default function Transactions() {
  const { environment } = useSession();
  const can = useCan();
  const currencies = useCurrencies();
  const [params, setParams] = useSearchParams();
  const value = (k: (typeof FILTER_KEYS)[number]) => params.get(k) ?? "";
  // The enabled currency types, and the one of the address bar should it be another (a type since disabled).
  const currencyOptions = (currencies.list ?? []).map((c) => c.currencyType as string);
  if (value("currencyType") && !currencyOptions.includes(value("currencyType")))
    currencyOptions.push(value("currencyType"));
  const [search, setSearch] = useState(value("search"));

  const query = {
    type: value("type"),
    status: value("status"),
    currencyType: value("currencyType"),
    search: value("search"),
    from: dayBound(value("from"), false),
    to: dayBound(value("to"), true),
    sortBy: value("sortBy") || "createdAt",
    order: value("order") || "desc",
  };
  const page = Number(value("page") || "1");
  const list = useQuery({
    queryKey: useEnvKey("transactions", query, page),
    queryFn: () => getList<Transaction>("/api/v1/dashboard/transactions", { ...query, page, limit: 20 }),
    placeholderData: keepPreviousData,
  });
  // Deposits from a frozen or refused sender wait for the owner's or an admin's decision.
  const held = useHeldDecision();
  const heldCount = useQuery({
    queryKey: useEnvKey("transactions", "held-count"),
    queryFn: () =>
      getList<Transaction>("/api/v1/dashboard/transactions", { type: "deposit", status: "held", limit: 1 }),
  });
  const heldTotal = heldCount.data?.pagination.total ?? 0;

  function update(changes: Partial<Record<(typeof FILTER_KEYS)[number], string>>) {
    const next = new URLSearchParams(params);
    for (const [k, v] of Object.entries(changes)) {
      if (v) next.set(k, v);
      else next.delete(k);
    }
    if (!("page" in changes)) next.delete("page");
    setParams(next);
  }

  /** The server's streamed export (every matching row, no cap), saved as a file. */
  const exporting = useMutation({
    mutationFn: async () => {
      const { sortBy: _sortBy, order: _order, ...filters } = query;
      const file = await getFile("/api/v1/dashboard/exports/transactions.csv", filters);
      download(
        file.filename ??
          `stablegate-${environment}-transactions-${new Date().toISOString().slice(0, 10)}.csv`,
        file.blob,
      );
    },
  });

  const filtered = FILTER_KEYS.some((k) => k !== "page" && k !== "sortBy" && k !== "order" && value(k));
  return (
    <>
      <PageHeader title="Transactions">
        {can("exports:read") ? (
          <ActionButton mutation={exporting} onClick={() => exporting.mutate()} pendingLabel="Exporting…">
            Export CSV
          </ActionButton>
        ) : null}
      </PageHeader>
      <ErrorNotice error={exporting.error} />
      {heldTotal > 0 && value("status") !== "held" ? (
        <Notice kind="warning">
          <p>
            <strong>
              {heldTotal} deposit{heldTotal === 1 ? " is" : "s are"} held
            </strong>
            : {heldTotal === 1 ? "its sender was" : "their senders were"} frozen by the token's issuer or
            refused by screening, so {heldTotal === 1 ? "it is" : "they are"} not in your available balance.{" "}
            {held.canReview
              ? "Release (credit) or return each one."
              : "The owner or an admin decides whether to release or return them."}
          </p>
          <button
            type="button"
            className="btn btn-small"
            onClick={() => update({ type: "deposit", status: "held" })}
          >
            Show held deposits
          </button>
        </Notice>
      ) : null}
      {held.notice}
      <Form
        className="filters"
        aria-label="Filter transactions"
        onSubmit={() => update({ search: search.trim() })}
      >
        <Field
          label="Search"
          hint="Matches ids, addresses, transaction hashes, order IDs and references, literally."
        >
          {(id, hint) => (
            <div className="search-row">
              <input
                id={id}
                type="search"
                aria-describedby={hint}
                value={search}
                onChange={(e) => setSearch(e.target.value)}
              />
              <SubmitButton className="btn">Search</SubmitButton>
            </div>
          )}
        </Field>
        <Field label="Type">
          {(id) => (
            <select id={id} value={value("type")} onChange={(e) => update({ type: e.target.value })}>
              <option value="">All types</option>
              {TRANSACTION_TYPES.map((t) => (
                <option key={t} value={t}>
                  {t}
                </option>
              ))}
            </select>
          )}
        </Field>
        <Field label="Status">
          {(id) => (
            <select id={id} value={value("status")} onChange={(e) => update({ status: e.target.value })}>
              <option value="">All statuses</option>
              {TRANSACTION_STATUSES.map((t) => (
                <option key={t} value={t}>
                  {t}
                </option>
              ))}
            </select>
          )}
        </Field>
        <Field label="Currency">
          {(id) => (
            <select
              id={id}
              value={value("currencyType")}
              onChange={(e) => update({ currencyType: e.target.value })}
            >
              <option value="">All currencies</option>
              {currencyOptions.map((c) => (
                <option key={c} value={c}>
                  {currencies.label(c)}
                </option>
              ))}
            </select>
          )}
        </Field>
        <Field label="From">
          {(id) => (
            <input
              id={id}
              type="date"
              value={value("from")}
              onChange={(e) => update({ from: e.target.value })}
            />
          )}
        </Field>
        <Field label="To">
          {(id) => (
            <input id={id} type="date" value={value("to")} onChange={(e) => update({ to: e.target.value })} />
          )}
        </Field>
        <Field label="Sort by">
          {(id) => (
            <select id={id} value={query.sortBy} onChange={(e) => update({ sortBy: e.target.value })}>
              {SORTS.map((s) => (
                <option key={s.value} value={s.value}>
                  {s.label}
                </option>
              ))}
            </select>
          )}
        </Field>
        <Field label="Order">
          {(id) => (
            <select id={id} value={query.order} onChange={(e) => update({ order: e.target.value })}>
              {Object.entries(ORDERS).map(([o, label]) => (
                <option key={o} value={o}>
                  {label}
                </option>
              ))}
            </select>
          )}
        </Field>
        {filtered ? (
          <button
            type="button"
            className="btn btn-link"
            onClick={() => {
              setSearch("");
              setParams(new URLSearchParams());
            }}
          >
            Clear filters
          </button>
        ) : null}
      </Form>
      {list.isPending ? <Loading label="Loading transactions…" /> : null}
      <ErrorNotice error={list.error} />
      {list.data && list.data.data.length === 0 ? (
        <Empty title={filtered ? "No transactions match these filters" : "No transactions yet"}>
          {filtered ? <p>Try a broader search or clear the filters.</p> : null}
        </Empty>
      ) : null}
      {list.data && list.data.data.length > 0 ? (
        <>
          <p className="muted" aria-live="polite">
            {list.data.pagination.total} transaction{list.data.pagination.total === 1 ? "" : "s"}
          </p>
          <TransactionTable rows={list.data.data} caption="Transactions" actions={held.actions} />
          <Pager pagination={list.data.pagination} onPage={(p) => update({ page: String(p) })} />
        </>
      ) : null}
      {held.dialogs}
    </>
  );
}
