import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useEffect, useState } from "react";
import { get, patch, post } from "../api/client";
import type { Branding, Settings as SettingsData } from "../api/types";
import { Form, FormError, SubmitButton } from "../components/Form";
import { useStepUp } from "../components/StepUp";
import { CodeField, ErrorNotice, Field, Loading, Notice, PageHeader, SIX_DIGIT_CODE } from "../components/ui";
import { useCurrencies } from "../lib/currencies";
import { useCan, useEnvKey, useSession } from "../session";

/**
 * Four-eyes (issue #21): per currency, requests above it need two members' approvals; null = off.
 * Shown only when the server sends it (older servers do not have it).
 */
type DualThreshold = Record<string, number | string | null>;

function WithdrawalSettings() {
  const { environment } = useSession();
  const canWrite = useCan()("settings:write");
  const client = useQueryClient();
  const currencies = useCurrencies();
  const settings = useQuery({
    queryKey: useEnvKey("settings"),
    queryFn: () => get<SettingsData>("/api/v1/dashboard/settings"),
  });
  const [autoWithdraw, setAutoWithdraw] = useState(true);
  const [thresholds, setThresholds] = useState<Record<string, string>>({});
  const [allowlist, setAllowlist] = useState("");
  const [tolerance, setTolerance] = useState("0");
  const [dual, setDual] = useState<Record<string, string> | null>(null);
  const stepUp = useStepUp();
  useEffect(() => {
    const s = settings.data;
    if (!s) return;
    setAutoWithdraw(s.autoWithdraw);
    setThresholds(Object.fromEntries(Object.entries(s.autoApproveThreshold).map(([k, v]) => [k, String(v)])));
    setAllowlist(s.ipAllowlist.join("\n"));
    setTolerance(String(s.underpaymentTolerancePercent));
    const d: DualThreshold | undefined = s.dualApprovalThreshold;
    setDual(
      d && typeof d === "object"
        ? Object.fromEntries(
            Object.entries(d).map(([c, v]) => [c, v === null || v === undefined ? "" : String(v)]),
          )
        : null,
    );
  }, [settings.data]);
  const save = useMutation({
    mutationFn: () =>
      stepUp.run((codes) =>
        patch<SettingsData>("/api/v1/dashboard/settings", {
          ...codes,
          autoWithdraw,
          autoApproveThreshold: thresholds,
          ipAllowlist: allowlist
            .split(/[\s,]+/)
            .map((s) => s.trim())
            .filter(Boolean),
          underpaymentTolerancePercent: Number(tolerance),
          // Empty turns four-eyes off for that currency.
          ...(dual
            ? {
                dualApprovalThreshold: Object.fromEntries(
                  Object.entries(dual).map(([k, v]) => [k, v.trim() === "" ? null : v.trim()]),
                ),
              }
            : {}),
        }),
      ),
    onSuccess: (s) => client.setQueryData([environment, "settings"], s),
  });

  if (settings.isPending) return <Loading />;
  if (settings.error) return <ErrorNotice error={settings.error} />;
  // The environment's enabled currency types (the settings carry the same keys: their order and
  // names come from the listing, the keys stand in until it is there).
  const types: string[] =
    currencies.list?.map((c) => c.currencyType) ?? Object.keys(settings.data.autoApproveThreshold);
  return (
    <section className="card" aria-labelledby="withdraw-settings">
      <h2 id="withdraw-settings">Withdrawals and access ({environment})</h2>
      {canWrite ? null : (
        <p className="muted">Your role can read these settings; an owner or admin changes them.</p>
      )}
      <Form submission={save} onSubmit={() => save.mutate()}>
        <fieldset className="plain-fieldset" disabled={!canWrite}>
          <legend className="visually-hidden">Withdrawal and access settings</legend>
          <div className="checkbox">
            <input
              id="auto-withdraw"
              type="checkbox"
              checked={autoWithdraw}
              onChange={(e) => setAutoWithdraw(e.target.checked)}
              aria-describedby="auto-withdraw-hint"
            />
            <label htmlFor="auto-withdraw">Send withdrawal requests automatically</label>
            <p className="hint" id="auto-withdraw-hint">
              When on, requests at or under the threshold are sent at once; larger ones wait for your
              approval. When off, every request waits.
            </p>
          </div>
          <div className="form-grid">
            {types.map((c) => (
              <Field key={c} label={`Auto-approve threshold, ${currencies.label(c)}`}>
                {(id) => (
                  <input
                    id={id}
                    inputMode="decimal"
                    value={thresholds[c] ?? ""}
                    onChange={(e) => setThresholds({ ...thresholds, [c]: e.target.value })}
                  />
                )}
              </Field>
            ))}
          </div>
          {dual ? (
            <div className="form-grid">
              {types.map((c) => (
                <Field
                  key={c}
                  label={`Two approvals above, ${currencies.label(c)}`}
                  hint="Requests above this amount need two members' approvals. Empty: one is enough."
                >
                  {(id, hint) => (
                    <input
                      id={id}
                      inputMode="decimal"
                      aria-describedby={hint}
                      value={dual[c] ?? ""}
                      onChange={(e) => setDual({ ...dual, [c]: e.target.value })}
                    />
                  )}
                </Field>
              ))}
            </div>
          ) : null}
          <Field
            label="Underpayment tolerance (%)"
            hint="0–10 %. A checkout session paid at least its amount less this share by its deadline is confirmed (e.g. 1 % accepts 99 USDT for 100). What arrived is always credited."
          >
            {(id, hint) => (
              <input
                id={id}
                inputMode="decimal"
                aria-describedby={hint}
                value={tolerance}
                onChange={(e) => setTolerance(e.target.value)}
              />
            )}
          </Field>
          <Field
            label="IP allowlist"
            hint="One IP address or CIDR range per line (e.g. 203.0.113.7 or 203.0.113.0/24). Empty: API keys work from any address."
          >
            {(id, hint) => (
              <textarea
                id={id}
                rows={4}
                aria-describedby={hint}
                value={allowlist}
                onChange={(e) => setAllowlist(e.target.value)}
              />
            )}
          </Field>
        </fieldset>
        <FormError />
        {save.isSuccess ? <Notice kind="success">Settings saved.</Notice> : null}
        {canWrite ? <SubmitButton pendingLabel="Saving…">Save settings</SubmitButton> : null}
      </Form>
      {stepUp.dialog}
    </section>
  );
}

/** Largest logo file the server accepts (domain/branding.ts). */
const MAX_LOGO_BYTES = 256 * 1024;

/** A file's bytes as standard base64 (in slices: a spread of 256 KiB would overflow the call stack). */
async function base64Of(file: File): Promise<string> {
  const bytes = new Uint8Array(await file.arrayBuffer());
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000)
    binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(binary);
}

/**
 * The hosted payment page's name and logo (issue #41): one per merchant, shown in both environments.
 * The server decides what a logo is from its bytes; the checks here only spare a round trip.
 */
function CheckoutPageSettings() {
  const canWrite = useCan()("settings:write");
  const client = useQueryClient();
  const branding = useQuery({
    queryKey: ["branding"],
    queryFn: () => get<Branding>("/api/v1/dashboard/settings/branding"),
  });
  const [displayName, setDisplayName] = useState("");
  const [file, setFile] = useState<File | null>(null);
  const [fileError, setFileError] = useState<string | null>(null);
  useEffect(() => {
    if (branding.data) setDisplayName(branding.data.displayName ?? "");
  }, [branding.data]);
  const save = useMutation({
    mutationFn: async () =>
      patch<Branding>("/api/v1/dashboard/settings/branding", {
        displayName: displayName.trim() === "" ? null : displayName,
        ...(file ? { logo: await base64Of(file) } : {}),
      }),
    onSuccess: (b) => {
      client.setQueryData(["branding"], b);
      setFile(null);
    },
  });
  const removeLogo = useMutation({
    mutationFn: () => patch<Branding>("/api/v1/dashboard/settings/branding", { logo: null }),
    onSuccess: (b) => client.setQueryData(["branding"], b),
  });

  if (branding.isPending) return <Loading />;
  if (branding.error) return <ErrorNotice error={branding.error} />;
  const b = branding.data;
  return (
    <section className="card" aria-labelledby="checkout-page-settings">
      <h2 id="checkout-page-settings">Checkout page</h2>
      <p className="muted">
        The name and logo your customers see on the hosted payment page, in both environments.
      </p>
      <Form submission={save} onSubmit={() => save.mutate()}>
        <fieldset className="plain-fieldset" disabled={!canWrite}>
          <legend className="visually-hidden">Checkout page branding</legend>
          <Field
            label="Display name"
            hint={`Up to 80 characters. Empty: your company name (${b.companyName}).`}
          >
            {(id, hint) => (
              <input
                id={id}
                maxLength={80}
                aria-describedby={hint}
                value={displayName}
                onChange={(e) => setDisplayName(e.target.value)}
              />
            )}
          </Field>
          {b.logo ? (
            <p>
              <img
                className="brand-logo-preview"
                src={b.logo.url}
                alt="Current logo"
                width={b.logo.width}
                height={b.logo.height}
              />
            </p>
          ) : null}
          <Field
            label="Logo"
            hint="PNG, JPEG or WebP, at most 256 KiB and 2048 × 2048 pixels. SVG is not accepted."
          >
            {(id, hint) => (
              <input
                id={id}
                type="file"
                accept="image/png,image/jpeg,image/webp"
                aria-describedby={hint}
                onChange={(e) => {
                  const f = e.target.files?.[0] ?? null;
                  setFileError(f && f.size > MAX_LOGO_BYTES ? "This file is larger than 256 KiB." : null);
                  setFile(f && f.size <= MAX_LOGO_BYTES ? f : null);
                }}
              />
            )}
          </Field>
          {fileError ? <Notice kind="warning">{fileError}</Notice> : null}
        </fieldset>
        <FormError />
        {save.isSuccess ? <Notice kind="success">Checkout page saved.</Notice> : null}
        {canWrite ? <SubmitButton pendingLabel="Saving…">Save checkout page</SubmitButton> : null}
      </Form>
      {canWrite && b.logo ? (
        <button type="button" className="btn btn-small" onClick={() => removeLogo.mutate()}>
          Remove logo
        </button>
      ) : null}
    </section>
  );
}

function TwoFactor() {
  const { me, signedIn } = useSession();
  const [setup, setSetup] = useState<{ secret: string; otpauthUri: string; qrCode: string } | null>(null);
  const [code, setCode] = useState("");
  // Turning 2FA on or off is account-wide: the e-mailed code (and, to turn it off, the
  // authenticator code), in any environment (docs/merchants/authentication.md#step-up-for-production-changes).
  const stepUp = useStepUp({ always: true, reason: "Two-factor authentication guards every sign-in" });
  const start = useMutation({
    mutationFn: () => post<{ secret: string; otpauthUri: string; qrCode: string }>("/api/v1/auth/2fa/setup"),
    onSuccess: setSetup,
  });
  const enable = useMutation({
    mutationFn: () => stepUp.run((codes) => post("/api/v1/auth/2fa/enable", { code, ...codes })),
    onSuccess: async () => {
      setSetup(null);
      setCode("");
      await signedIn();
    },
  });
  const disable = useMutation({
    mutationFn: () => stepUp.run((codes) => post("/api/v1/auth/2fa/disable", codes)),
    onSuccess: async () => {
      await signedIn();
    },
  });
  const enabled = me?.user.totpEnabled === true;
  return (
    <section className="card" aria-labelledby="twofa-title">
      <h2 id="twofa-title">Two-factor authentication</h2>
      <p>
        Status: <strong data-testid="twofa-status">{enabled ? "on" : "off"}</strong>. With it on, signing in
        also asks for a code from an authenticator app.
      </p>
      {enable.isSuccess ? <Notice kind="success">Two-factor authentication is on.</Notice> : null}
      {disable.isSuccess ? <Notice kind="success">Two-factor authentication is off.</Notice> : null}
      {!enabled && !setup ? (
        <button
          type="button"
          className="btn btn-primary"
          onClick={() => start.mutate()}
          disabled={start.isPending}
        >
          Set up two-factor authentication
        </button>
      ) : null}
      <ErrorNotice error={start.error} />
      {!enabled && setup ? (
        <Form submission={enable} onSubmit={() => enable.mutate()}>
          <ol className="numbered">
            <li>
              Scan this QR code with your authenticator app.
              <div>
                <img
                  src={setup.qrCode}
                  alt="QR code for your authenticator app"
                  width={180}
                  height={180}
                  className="qr"
                />
              </div>
              <p className="hint">
                Can't scan? Enter this key by hand:{" "}
                <code data-testid="totp-secret" className="break">
                  {setup.secret}
                </code>
              </p>
            </li>
            <li>
              <CodeField label="Enter the 6-digit code it shows" value={code} onChange={setCode} />
            </li>
          </ol>
          <FormError />
          <SubmitButton>Turn on</SubmitButton>
        </Form>
      ) : null}
      {enabled ? (
        <div className="inline-form">
          <button
            type="button"
            className="btn btn-danger"
            onClick={() => disable.mutate()}
            disabled={disable.isPending}
          >
            Turn off…
          </button>
          <ErrorNotice error={disable.error} />
        </div>
      ) : null}
      {stepUp.dialog}
    </section>
  );
}

function PasswordChange() {
  const { environment } = useSession();
  const [form, setForm] = useState({ currentPassword: "", newPassword: "", otp: "" });
  const [codeSent, setCodeSent] = useState(false);
  const requestCode = useMutation({
    mutationFn: () => post("/api/v1/auth/otp", { purpose: "password_change" }),
    onSuccess: () => setCodeSent(true),
  });
  const change = useMutation({
    mutationFn: () => post("/api/v1/auth/password/change", form),
    onSuccess: () => {
      setForm({ currentPassword: "", newPassword: "", otp: "" });
      setCodeSent(false);
    },
  });
  const set = (k: keyof typeof form) => (e: React.ChangeEvent<HTMLInputElement>) =>
    setForm({ ...form, [k]: e.target.value });
  return (
    <section className="card" aria-labelledby="password-title">
      <h2 id="password-title">Password</h2>
      {change.isSuccess ? (
        <Notice kind="success">Password changed. Your other sessions have been signed out.</Notice>
      ) : null}
      <Form
        submission={{
          isPending: requestCode.isPending || change.isPending,
          error: requestCode.error ?? change.error,
        }}
        onSubmit={() => (codeSent ? change.mutate() : requestCode.mutate())}
      >
        <div className="form-grid">
          <Field label="Current password">
            {(id) => (
              <input
                id={id}
                type="password"
                autoComplete="current-password"
                required
                value={form.currentPassword}
                onChange={set("currentPassword")}
              />
            )}
          </Field>
          <Field label="New password" hint="At least 10 characters.">
            {(id, hint) => (
              <input
                id={id}
                type="password"
                autoComplete="new-password"
                minLength={10}
                required
                aria-describedby={hint}
                value={form.newPassword}
                onChange={set("newPassword")}
              />
            )}
          </Field>
          {codeSent ? (
            <Field
              label="6-digit code from the e-mail"
              hint={
                environment === "sandbox" ? "Without a mail server, it is in the mail outbox." : undefined
              }
            >
              {(id, hint) => (
                <input
                  id={id}
                  {...SIX_DIGIT_CODE}
                  aria-describedby={hint}
                  value={form.otp}
                  onChange={set("otp")}
                />
              )}
            </Field>
          ) : null}
        </div>
        <FormError />
        <SubmitButton className="btn">{codeSent ? "Change password" : "E-mail me a code"}</SubmitButton>
      </Form>
    </section>
  );
}

export default function Settings() {
  return (
    <>
      <PageHeader title="Settings" />
      <WithdrawalSettings />
      <CheckoutPageSettings />
      <TwoFactor />
      <PasswordChange />
    </>
  );
}
