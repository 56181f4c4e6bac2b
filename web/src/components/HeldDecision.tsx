import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { type ReactNode, useEffect, useState } from "react";
import { get, post } from "../api/client";
import type { Transaction } from "../api/types";
import { useCurrencies } from "../lib/currencies";
import { formatAmount, shorten } from "../lib/format";
import { holdReasonText } from "../lib/held";
import { useCan, useEnvKey, useSession } from "../session";
import { ConfirmAction } from "./Form";
import { useStepUp } from "./StepUp";
import { Notice } from "./ui";

/**
 * The decision on a held deposit (README.md#frozen-funds, issue #40): a deposit whose sender the
 * token's issuer froze, or screening refused, waits `held` until the owner or an admin
 * (`deposits:review`) releases it (credited, minus the deposit fee) or returns it (what arrived goes
 * back to the sender, from the deposit address, once). A screen showing transactions:
 *
 *   const held = useHeldDecision();
 *   …{held.notice}
 *   <TransactionTable rows={…} actions={held.actions} />   (or held.actions(t) on a detail)
 *   …{held.dialogs}
 *
 * Each decision asks for a confirmation that says what happens, then the step-up codes in
 * production (the one step-up dialog, StepUp.tsx). The server answers 202 with the deposit still
 * `held` (a worker carries the decision out within a second or two), so the deposit is read again
 * every second until it is no longer `held` (at most FOLLOW_MS), then every list is refreshed.
 */

export type HeldAction = "release" | "return";

const POLL_MS = 1000;
/** How long the deposit is followed after a decision ("a few seconds"; the worker takes about one). */
const FOLLOW_MS = 10_000;

interface Decision {
  kind: HeldAction;
  t: Transaction;
}

export function useHeldDecision() {
  const { environment } = useSession();
  const canReview = useCan()("deposits:review");
  const client = useQueryClient();
  const { label } = useCurrencies();
  const stepUp = useStepUp({ reason: "A decision on a held deposit moves live money" });
  const [pending, setPending] = useState<Decision | null>(null);
  const [decided, setDecided] = useState<Decision | null>(null);
  const [timedOut, setTimedOut] = useState(false);

  const decide = useMutation({
    mutationFn: (d: Decision) =>
      stepUp.run((codes) =>
        post<Transaction>(`/api/v1/dashboard/transactions/${encodeURIComponent(d.t.id)}/${d.kind}`, codes),
      ),
    onSuccess: (t, d) => {
      setPending(null);
      setTimedOut(false);
      setDecided({ kind: d.kind, t });
    },
  });

  // The deposit just decided, read again until the worker has carried the decision out. The key is
  // the detail screen's, so an open detail follows it too.
  const followed = useQuery({
    queryKey: useEnvKey("transaction", decided?.t.id),
    queryFn: () =>
      get<Transaction>(`/api/v1/dashboard/transactions/${encodeURIComponent(decided?.t.id ?? "")}`),
    enabled: decided !== null,
    refetchInterval: (q) => (!timedOut && (q.state.data?.status ?? "held") === "held" ? POLL_MS : false),
  });
  const now = decided && followed.data?.id === decided.t.id ? followed.data : decided?.t;
  const settled = decided !== null && now !== undefined && now.status !== "held";
  useEffect(() => {
    if (!decided || settled) return;
    const timer = setTimeout(() => setTimedOut(true), FOLLOW_MS);
    return () => clearTimeout(timer);
  }, [decided, settled]);
  // Done (or followed long enough): every list, balance and detail of the environment is read again.
  useEffect(() => {
    if (decided && (settled || timedOut)) void client.invalidateQueries({ queryKey: [environment] });
  }, [decided, settled, timedOut, client, environment]);

  const inFlight = (t: Transaction) => decided?.t.id === t.id && !settled && !timedOut;

  /** The two decisions of a held deposit, for a member who may take them (null otherwise). */
  const actions = (t: Transaction): ReactNode => {
    if (!canReview || t.type !== "deposit" || t.status !== "held" || inFlight(t)) return null;
    const name = <span className="visually-hidden"> {t.id}</span>;
    return (
      <span className="row-actions">
        <button
          type="button"
          className="btn btn-small btn-primary"
          onClick={() => setPending({ kind: "release", t })}
        >
          Release (credit it){name}
        </button>
        <button type="button" className="btn btn-small" onClick={() => setPending({ kind: "return", t })}>
          Return to sender{name}
        </button>
      </span>
    );
  };

  const id = decided ? <code>{shorten(decided.t.id, 8, 4)}</code> : null;
  let notice: ReactNode = null;
  if (decided && now && settled) {
    notice = (
      <Notice kind="success">
        <span data-testid="held-decision">
          Deposit {id} is now <strong>{now.status}</strong>.
          {now.status === "confirmed"
            ? ` ${formatAmount(now.netAmount)} ${label(now.currencyType)} is credited to your available balance.`
            : now.status === "returned"
              ? " What arrived is being sent back to its sender in one transfer from the deposit address."
              : null}
        </span>
      </Notice>
    );
  } else if (decided && timedOut) {
    notice = (
      <Notice kind="warning">
        <span data-testid="held-decision">
          Your decision on deposit {id} is recorded and still being carried out. Its status changes here once
          it is done: refresh in a moment.
        </span>
      </Notice>
    );
  } else if (decided) {
    notice = (
      <Notice kind="success">
        <span data-testid="held-decision">
          {decided.kind === "release" ? "Releasing deposit " : "Returning deposit "}
          {id}
          {decided.kind === "release"
            ? ": it is being credited to your available balance."
            : " to its sender: the transfer back is being made."}{" "}
          This takes a few seconds.
        </span>
      </Notice>
    );
  }

  const t = pending?.t;
  const arrived = t ? (t.actualBalance ?? t.amount) : 0;
  const reason = holdReasonText(t?.holdReason);
  const dialogs = (
    <>
      <ConfirmAction
        subject={pending}
        submission={decide}
        title={pending?.kind === "release" ? "Release this deposit?" : "Return this deposit to its sender?"}
        confirmLabel={pending?.kind === "release" ? "Release and credit" : "Return to sender"}
        danger={pending?.kind === "return"}
        onConfirm={(d) => decide.mutate(d)}
        onClose={() => setPending(null)}
      >
        {t ? (
          <>
            {reason ? <p>Held because: {reason}.</p> : null}
            {pending?.kind === "release" ? (
              <p>
                The deposit of {formatAmount(arrived)} {label(t.currencyType)} is credited to your available
                balance, minus the deposit fee of {formatAmount(t.fee)}:{" "}
                <strong>
                  {formatAmount(t.netAmount)} {label(t.currencyType)}
                </strong>
                . It becomes confirmed and your server receives its webhook.
                {t.checkoutSessionId ? " The checkout session it was paid to stays unpaid." : null} This can't
                be undone.
              </p>
            ) : (
              <p>
                Exactly what arrived,{" "}
                <strong>
                  {formatAmount(arrived)} {label(t.currencyType)}
                </strong>
                , is sent back to the address it came from, in one transfer from the deposit address
                {t.walletAddress ? (
                  <>
                    {" "}
                    <code className="break">{t.walletAddress}</code>
                  </>
                ) : null}
                , once. Nothing is credited to your balance. It becomes returned and your server receives its
                webhook; should the transfer fail, the deposit is held again.
                {t.holdReason === "token_blacklist"
                  ? " The sender's address is frozen by the token's issuer: the coins go back onto that frozen address, where only the issuer can move them (with USDC the transfer is refused and the deposit stays held)."
                  : null}
              </p>
            )}
          </>
        ) : null}
      </ConfirmAction>
      {stepUp.dialog}
    </>
  );

  return { canReview, actions, notice, dialogs };
}
