import { keepPreviousData, useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useEffect, useRef, useState } from "react";
import { Link } from "react-router-dom";
import { get, getList, post } from "../api/client";
import type { Balance, ChainFamily, CurrencyType, Payout, Settings } from "../api/types";
import { CurrencySelect } from "../components/CurrencySelect";
import { Form, FormError, SubmitButton } from "../components/Form";
import {
  CodeField,
  Empty,
  ErrorNotice,
  Field,
  Loading,
  Notice,
  PageHeader,
  Pager,
  StatusBadge,
} from "../components/ui";
import { addressProblem } from "../lib/addresses";
import { useCurrencies } from "../lib/currencies";
import { amountUnits, payoutQuote } from "../lib/fees";
import { formatAmount, formatDate, shorten } from "../lib/format";
import { useLiveStatus } from "../lib/live";
import { useCan, useEnvKey, useSession } from "../session";

type Step = "form" | "otp" | "done";

/** The API's fields by this form's labels (in error messages); the amount's names the token. */
const labels = (amount: string) => ({
  amount,
  currencyType: "Network",
  walletAddress: "Recipient wallet address",
});

/**
 * The sandbox's failure address per chain family (docs/merchants/sandbox.md#simulated-payments): a
 * transfer to it fails on-chain. One EVM address serves every EVM network.
 */
const FAILURE_ADDRESSES = {
  tron: "T9yD14Nj9j7xAB4dbGeiX9h8unkKHxuWwb",
  evm: "0x000000000000000000000000000000000000dEaD",
} satisfies Record<ChainFamily, string>;

export default function Payouts() {
  const { environment, me } = useSession();
  const canSend = useCan()("payouts:create");
  const client = useQueryClient();
  const currencies = useCurrencies();
  const [step, setStep] = useState<Step>("form");
  const [form, setForm] = useState({
    amount: "",
    // Until the merchant picks one: the environment's first enabled currency type.
    currencyType: null as CurrencyType | null,
    walletAddress: "",
  });
  const [otp, setOtp] = useState("");
  const [totp, setTotp] = useState("");
  // Production with 2FA on: the authenticator code too (docs/merchants/authentication.md#step-up-for-production-changes).
  const needsTotp = environment === "production" && me?.user.totpEnabled === true;
  const otpInput = useRef<HTMLInputElement>(null);
  useEffect(() => {
    if (step === "otp") otpInput.current?.focus();
  }, [step]);
  const [page, setPage] = useState(1);

  const balances = useQuery({
    queryKey: useEnvKey("balance"),
    queryFn: () => get<Balance[]>("/api/v1/dashboard/balance"),
  });
  const settings = useQuery({
    queryKey: useEnvKey("settings"),
    queryFn: () => get<Settings>("/api/v1/dashboard/settings"),
  });
  const payouts = useQuery({
    queryKey: useEnvKey("payouts", page),
    queryFn: () => getList<Payout>("/api/v1/dashboard/payouts", { page, limit: 10 }),
    placeholderData: keepPreviousData,
  });
  const requestOtp = useMutation({
    mutationFn: () => post<{ expiresAt: string }>("/api/v1/auth/otp", { purpose: "payout" }),
    onSuccess: () => setStep("otp"),
  });
  const selected = currencies.find(form.currencyType ?? "") ?? currencies.list?.[0];
  const token = selected?.token ?? "";
  const amountLabel = selected ? `Amount (${selected.token})` : "Amount";
  const send = useMutation({
    mutationFn: () =>
      post<Payout>("/api/v1/dashboard/payouts", {
        amount: form.amount,
        currencyType: selected?.currencyType,
        walletAddress: form.walletAddress,
        otp,
        ...(needsTotp ? { totp } : {}),
      }),
    onSuccess: async () => {
      setStep("done");
      await client.invalidateQueries({ queryKey: [environment] });
    },
  });
  const result = useLiveStatus(send.data, (id) => `/api/v1/dashboard/payouts?id=${encodeURIComponent(id)}`);
  const available = balances.data?.find((b) => b.currencyType === selected?.currencyType)?.available;
  // Checked in the form, before a code is e-mailed (shown once the merchant tried to continue).
  const [checked, setChecked] = useState(false);
  const units = amountUnits(form.amount);
  // The gateway's own fee schedule (the settings read carries it): the fee shown is the one charged.
  const rule = selected ? settings.data?.fees[selected.currencyType]?.payout : undefined;
  const quote = units === null || !rule ? null : payoutQuote(rule, units / 1_000_000);
  const amountProblem =
    units === null
      ? `Enter an amount in ${token || "the token"}, such as 12.5 (at most 6 decimals).`
      : quote && quote.net <= 0
        ? `The amount must be more than the fee (${formatAmount(quote.fee)} ${token}).`
        : null;
  const walletProblem = selected ? addressProblem(selected.chain, form.walletAddress) : null;

  /** Back to the details, as entered. */
  function back() {
    setStep("form");
    setOtp("");
    setTotp("");
    requestOtp.reset();
    send.reset();
  }

  /** A new payout: empty details. */
  function restart() {
    back();
    setChecked(false);
    setForm({ ...form, amount: "", walletAddress: "" });
  }

  return (
    <>
      <PageHeader title="Payouts" />
      {canSend ? (
        <section className="card" aria-labelledby="payout-form-title">
          <h2 id="payout-form-title">Send a payout</h2>
          <ol className="steps" aria-label="Steps">
            <li aria-current={step === "form" ? "step" : undefined}>Details</li>
            <li aria-current={step === "otp" ? "step" : undefined}>E-mailed code</li>
            <li aria-current={step === "done" ? "step" : undefined}>Result</li>
          </ol>
          {step === "form" ? (
            <Form
              className="form-grid"
              noValidate
              submission={requestOtp}
              onSubmit={() => {
                setChecked(true);
                if (!selected || amountProblem || walletProblem) return;
                requestOtp.mutate();
              }}
            >
              <Field
                label={amountLabel}
                hint={available !== undefined ? `Available: ${formatAmount(available)}` : undefined}
                error={checked ? amountProblem : undefined}
              >
                {(id, hint) => (
                  <input
                    id={id}
                    required
                    inputMode="decimal"
                    aria-describedby={hint}
                    aria-invalid={checked && amountProblem ? true : undefined}
                    value={form.amount}
                    onChange={(e) => setForm({ ...form, amount: e.target.value })}
                  />
                )}
              </Field>
              <Field label="Network">
                {(id) => (
                  <CurrencySelect
                    id={id}
                    currencies={currencies}
                    value={selected?.currencyType}
                    onChange={(currencyType) => setForm({ ...form, currencyType })}
                  />
                )}
              </Field>
              <Field
                label="Recipient wallet address"
                hint={
                  environment === "sandbox" && selected
                    ? `Sandbox tip: ${FAILURE_ADDRESSES[selected.chain]} always fails, to test the failed path.`
                    : "Double-check it: a blockchain transfer can't be reversed."
                }
                error={checked ? walletProblem : undefined}
              >
                {(id, hint) => (
                  <input
                    id={id}
                    required
                    spellCheck={false}
                    autoComplete="off"
                    aria-describedby={hint}
                    aria-invalid={checked && walletProblem ? true : undefined}
                    value={form.walletAddress}
                    onChange={(e) => setForm({ ...form, walletAddress: e.target.value.trim() })}
                  />
                )}
              </Field>
              <p className="fee-line" data-testid="payout-fee" aria-live="polite">
                {quote && quote.net > 0 ? (
                  <>
                    Fee {formatAmount(quote.fee)} {token}: the recipient gets{" "}
                    <strong>
                      {formatAmount(quote.net)} {token}
                    </strong>
                    .
                  </>
                ) : rule && selected ? (
                  <>
                    Fee {formatAmount(rule.fixed)} {token}
                    {rule.percent ? ` + ${rule.percent} %` : ""} per payout on{" "}
                    {currencies.label(selected.currencyType)}: the recipient gets the amount minus the fee.
                  </>
                ) : null}
              </p>
              <div className="form-actions">
                <SubmitButton pendingLabel="Sending code…">Continue: e-mail me a code</SubmitButton>
              </div>
              <FormError labels={labels(amountLabel)} />
            </Form>
          ) : null}
          {step === "otp" && selected ? (
            <Form submission={send} onSubmit={() => send.mutate()}>
              <p>
                Send{" "}
                <strong>
                  {form.amount} {currencies.label(selected.currencyType)}
                </strong>{" "}
                to <code className="break">{form.walletAddress}</code>.
                {quote ? (
                  <>
                    {" "}
                    Fee {formatAmount(quote.fee)} {token}: the recipient gets{" "}
                    <strong>
                      {formatAmount(quote.net)} {token}
                    </strong>
                    .
                  </>
                ) : null}
              </p>
              <CodeField
                label="6-digit code"
                hint={
                  <>
                    We e-mailed a code to {me?.user.email}. It works once, for 10 minutes.{" "}
                    {environment === "sandbox" ? (
                      <>
                        Without a mail server, find it in the <Link to="/mail">mail outbox</Link>.
                      </>
                    ) : null}
                  </>
                }
                inputRef={otpInput}
                value={otp}
                onChange={setOtp}
              />
              {needsTotp ? <CodeField label="Authenticator code" value={totp} onChange={setTotp} /> : null}
              <FormError labels={labels(amountLabel)} />
              <div className="form-actions">
                <button type="button" className="btn" onClick={back}>
                  Back
                </button>
                <SubmitButton pendingLabel="Sending payout…">Confirm and send</SubmitButton>
              </div>
            </Form>
          ) : null}
          {step === "done" && result ? (
            <div data-testid="payout-result">
              <Notice kind={result.status === "failed" ? "warning" : "success"}>
                <p className="notice-title">
                  Payout <StatusBadge status={result.status} />
                </p>
                {result.status === "failed" ? (
                  <p>The transfer failed on-chain. The amount is back in your available balance.</p>
                ) : result.status === "processing" ? (
                  <p>
                    {formatAmount(result.netAmount)} {currencies.label(result.currencyType)} is being sent
                    (fee {formatAmount(result.fee)}). This page updates when the blockchain confirms it.
                  </p>
                ) : (
                  <p>
                    {formatAmount(result.netAmount)} {currencies.label(result.currencyType)} sent (fee{" "}
                    {formatAmount(result.fee)}).
                  </p>
                )}
                {result.blockchainTxHash ? (
                  <p>
                    Transaction hash: <code className="break">{result.blockchainTxHash}</code>
                  </p>
                ) : null}
              </Notice>
              <button type="button" className="btn" onClick={restart}>
                Send another payout
              </button>
            </div>
          ) : null}
        </section>
      ) : null}
      <section aria-labelledby="payout-list">
        <h2 id="payout-list">Payout history</h2>
        {payouts.isPending ? <Loading /> : null}
        <ErrorNotice error={payouts.error} />
        {payouts.data && payouts.data.data.length === 0 ? <Empty title="No payouts yet" /> : null}
        {payouts.data && payouts.data.data.length > 0 ? (
          <>
            <div className="table-wrap">
              <table>
                <caption className="visually-hidden">Payouts</caption>
                <thead>
                  <tr>
                    <th scope="col">Date</th>
                    <th scope="col" className="num">
                      Amount
                    </th>
                    <th scope="col">Currency</th>
                    <th scope="col">To</th>
                    <th scope="col">Status</th>
                  </tr>
                </thead>
                <tbody>
                  {payouts.data.data.map((p) => (
                    <tr key={p.id}>
                      <td>{formatDate(p.createdAt)}</td>
                      <td className="num">{formatAmount(p.amount)}</td>
                      <td>{currencies.label(p.currencyType)}</td>
                      <td>
                        <code title={p.walletAddress}>{shorten(p.walletAddress)}</code>
                      </td>
                      <td>
                        <StatusBadge status={p.status} />
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
            <Pager pagination={payouts.data.pagination} onPage={setPage} />
          </>
        ) : null}
      </section>
    </>
  );
}
