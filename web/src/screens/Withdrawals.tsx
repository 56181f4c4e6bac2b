import { keepPreviousData, useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { get, getList, post } from "../api/client";
import { WITHDRAWAL_STATUSES, type Withdrawal, type WithdrawalStatus } from "../api/types";
import { ConfirmAction } from "../components/Form";
import { Empty, ErrorNotice, Field, Loading, Notice, PageHeader, Pager, StatusBadge } from "../components/ui";
import { useCurrencies } from "../lib/currencies";
import { formatAmount, formatDate, shorten } from "../lib/format";
import { useLiveStatus } from "../lib/live";
import { useCan, useEnvKey, useSession } from "../session";

/** The tabs' order: what waits for a decision first, what is still being sent last. */
const TAB_ORDER = { pending: 0, completed: 1, failed: 2, rejected: 3, processing: 4 } satisfies Record<
  WithdrawalStatus,
  number
>;
const TABS = [...WITHDRAWAL_STATUSES].sort((a, b) => TAB_ORDER[a] - TAB_ORDER[b]);

type Pending = { kind: "approve" | "reject"; w: Withdrawal } | null;

/**
 * Four-eyes (a request above the merchant's dual-approval threshold needs two different
 * approvers): the approvals so far and how many it needs. A single read and an approval's answer
 * carry them, lists do not.
 */
function approvalsOf(
  w: Withdrawal,
): { got: number; required: number; by: { user: string | null; label: string }[] } | null {
  const a = w;
  if (typeof a.approvalsRequired !== "number" || a.approvalsRequired < 2) return null;
  const list = Array.isArray(a.approvals) ? a.approvals : [];
  return {
    got: list.length,
    required: a.approvalsRequired,
    by: list.map((x) =>
      x.actorType === "user"
        ? { user: x.actorId, label: x.email ?? "a member" }
        : { user: null, label: "your server (API key)" },
    ),
  };
}

/**
 * For the approve dialog: how many approvals the request needs and who gave them (its single
 * read), or null when one approval sends it.
 */
function useApprovalState(id: string | undefined) {
  const { me } = useSession();
  const one = useQuery({
    queryKey: useEnvKey("withdrawal", id),
    queryFn: () => get<Withdrawal>(`/api/v1/dashboard/withdrawal-requests/${encodeURIComponent(id ?? "")}`),
    enabled: id !== undefined,
    staleTime: 0,
  });
  const a = id !== undefined && one.data ? approvalsOf(one.data) : null;
  if (!a) return null;
  return {
    ...a,
    mine: a.by.some((b) => b.user !== null && b.user === me?.user.id),
    sends: a.got + 1 >= a.required,
  };
}

export default function Withdrawals() {
  const { environment } = useSession();
  const canDecide = useCan()("withdrawals:approve");
  const { label } = useCurrencies();
  const client = useQueryClient();
  const [status, setStatus] = useState<WithdrawalStatus>("pending");
  const [page, setPage] = useState(1);
  const [action, setAction] = useState<Pending>(null);
  const [reason, setReason] = useState("");
  const [result, setResult] = useState<Withdrawal | null>(null);

  const list = useQuery({
    queryKey: useEnvKey("withdrawals", status, page),
    queryFn: () => getList<Withdrawal>("/api/v1/dashboard/withdrawal-requests", { status, page, limit: 20 }),
    placeholderData: keepPreviousData,
    refetchInterval: 10_000,
  });
  const decide = useMutation({
    mutationFn: (a: NonNullable<Pending>) =>
      post<Withdrawal>(
        `/api/v1/dashboard/withdrawal-requests/${encodeURIComponent(a.w.id)}/${a.kind}`,
        a.kind === "reject" && reason.trim() ? { reason: reason.trim() } : {},
      ),
    onSuccess: async (w) => {
      setResult(w);
      setAction(null);
      setReason("");
      await client.invalidateQueries({ queryKey: [environment] });
    },
  });

  // A first approval of two leaves the request pending: nothing to follow until the second.
  const live = useLiveStatus(
    result,
    (id) => `/api/v1/dashboard/withdrawal-requests/${encodeURIComponent(id)}`,
    result?.status !== "pending",
  );
  const liveApprovals = live ? approvalsOf(live) : null;
  const decisions = status === "pending" && canDecide;
  const w = action?.w;
  const four = useApprovalState(action?.kind === "approve" ? w?.id : undefined);
  return (
    <>
      <PageHeader title="Withdrawal requests" />
      <p className="muted">
        Requests your customers made through your API that are above your auto-approve threshold (or when
        auto-withdraw is off) wait here for you. Approving sends the funds on-chain; rejecting returns the
        held amount to your available balance.
        {canDecide ? null : " Your role can see these requests but not approve or reject them."}
      </p>
      <fieldset className="tabs">
        <legend className="visually-hidden">Status</legend>
        {TABS.map((t) => (
          <button
            key={t}
            type="button"
            className={t === status ? "tab is-active" : "tab"}
            aria-pressed={t === status}
            onClick={() => {
              setStatus(t);
              setPage(1);
            }}
          >
            {t}
          </button>
        ))}
      </fieldset>
      {live && live.status === "pending" && liveApprovals ? (
        <Notice kind="success">
          Your approval of withdrawal <code>{shorten(live.id, 8, 4)}</code> is recorded:{" "}
          <strong>
            {liveApprovals.got} of {liveApprovals.required} approvals
          </strong>
          . It is sent once another member approves it too.
        </Notice>
      ) : live && live.status !== "pending" ? (
        <Notice kind={live.status === "failed" ? "warning" : "success"}>
          Withdrawal <code>{shorten(live.id, 8, 4)}</code> is now <strong>{live.status}</strong>.
          {live.status === "failed" ? " The held amount is back in your available balance." : null}
          {live.blockchainTxHash ? (
            <>
              {" "}
              Transaction hash: <code>{live.blockchainTxHash}</code>
            </>
          ) : null}
        </Notice>
      ) : null}
      {list.isPending ? <Loading label="Loading withdrawal requests…" /> : null}
      <ErrorNotice error={list.error} />
      {list.data && list.data.data.length === 0 ? (
        <Empty
          title={status === "pending" ? "Nothing waits for your approval" : `No ${status} withdrawals`}
        />
      ) : null}
      {list.data && list.data.data.length > 0 ? (
        <>
          <div className="table-wrap">
            <table>
              <caption className="visually-hidden">Withdrawal requests, {status}</caption>
              <thead>
                <tr>
                  <th scope="col">Requested</th>
                  <th scope="col" className="num">
                    Amount
                  </th>
                  <th scope="col">Currency</th>
                  <th scope="col">To address</th>
                  <th scope="col">User / reference</th>
                  <th scope="col">Status</th>
                  {decisions ? <th scope="col">Decision</th> : null}
                </tr>
              </thead>
              <tbody>
                {list.data.data.map((r) => (
                  <tr key={r.id}>
                    <td>{formatDate(r.createdAt)}</td>
                    <td className="num">{formatAmount(r.amount)}</td>
                    <td>{label(r.currencyType)}</td>
                    <td>
                      <code title={r.walletAddress}>{shorten(r.walletAddress)}</code>
                    </td>
                    <td className="cell-break">{r.externalUserId ?? r.reference ?? "—"}</td>
                    <td>
                      <StatusBadge status={r.status} />
                      {r.rejectionReason ? <span className="muted"> {r.rejectionReason}</span> : null}
                    </td>
                    {decisions ? (
                      <td className="row-actions">
                        <button
                          type="button"
                          className="btn btn-small btn-primary"
                          onClick={() => setAction({ kind: "approve", w: r })}
                        >
                          Approve
                        </button>
                        <button
                          type="button"
                          className="btn btn-small btn-danger"
                          onClick={() => setAction({ kind: "reject", w: r })}
                        >
                          Reject
                        </button>
                      </td>
                    ) : null}
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <Pager pagination={list.data.pagination} onPage={setPage} />
        </>
      ) : null}
      <ConfirmAction
        subject={action}
        submission={decide}
        title={action?.kind === "approve" ? "Approve this withdrawal?" : "Reject this withdrawal?"}
        confirmLabel={
          action?.kind === "approve" ? (four && !four.sends ? "Approve" : "Approve and send") : "Reject"
        }
        danger={action?.kind === "reject"}
        onConfirm={(a) => decide.mutate(a)}
        onClose={() => setAction(null)}
      >
        {w ? (
          <>
            <p>
              {action?.kind === "approve" ? (
                <>
                  <strong>
                    {formatAmount(w.netAmount)} {label(w.currencyType)}
                  </strong>{" "}
                  will be sent to <code className="break">{w.walletAddress}</code> (amount{" "}
                  {formatAmount(w.amount)} minus the network fee {formatAmount(w.fee)}). This can't be undone.
                </>
              ) : (
                <>
                  The request for {formatAmount(w.amount)} {label(w.currencyType)} is rejected and the amount
                  returns to your available balance. Your server receives a webhook.
                </>
              )}
            </p>
            {action?.kind === "approve" && four ? (
              <p data-testid="approval-state">
                Above your four-eyes threshold, this request needs <strong>{four.required} approvals</strong>{" "}
                from different people:{" "}
                {four.got === 0
                  ? "none yet"
                  : `${four.got} so far (${four.by.map((b) => b.label).join(", ")})`}
                .{" "}
                {four.mine
                  ? "You approved it already: another member has to approve it."
                  : four.sends
                    ? "Yours sends it."
                    : "Yours is recorded; it is sent after the next approval."}
              </p>
            ) : null}
            {action?.kind === "reject" ? (
              <Field label="Reason (optional, sent in the webhook)">
                {(id) => (
                  <input id={id} maxLength={500} value={reason} onChange={(e) => setReason(e.target.value)} />
                )}
              </Field>
            ) : null}
          </>
        ) : null}
      </ConfirmAction>
    </>
  );
}
