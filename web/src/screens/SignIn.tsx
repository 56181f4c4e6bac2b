import { useMutation } from "@tanstack/react-query";
import { useEffect, useRef, useState } from "react";
import { Link, useLocation, useNavigate } from "react-router-dom";
import { ApiError, post } from "../api/client";
import { Form, FormError, SubmitButton } from "../components/Form";
import { CodeField, Field, PageHeader } from "../components/ui";
import { useSession } from "../session";

export default function SignIn() {
  const { signedIn } = useSession();
  const navigate = useNavigate();
  const location = useLocation();
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const [totp, setTotp] = useState("");
  const [needsTotp, setNeedsTotp] = useState(false);
  const totpInput = useRef<HTMLInputElement>(null);
  useEffect(() => {
    if (needsTotp) totpInput.current?.focus();
  }, [needsTotp]);

  const login = useMutation({
    mutationFn: () => post("/api/v1/auth/login", { email, password, ...(needsTotp ? { totp } : {}) }),
    onSuccess: async () => {
      await signedIn();
      const from = (location.state as { from?: string } | null)?.from;
      navigate(from && from !== "/login" ? from : "/", { replace: true });
    },
    onError: (e) => {
      if (e instanceof ApiError && e.details.totpRequired && !needsTotp) {
        setNeedsTotp(true);
        login.reset();
      }
    },
  });

  return (
    <section className="card auth-card" aria-labelledby="page-title">
      <p className="brand brand-large">stablegate</p>
      <PageHeader title={needsTotp ? "Two-factor code" : "Sign in"} />
      <Form submission={login} onSubmit={() => login.mutate()}>
        {!needsTotp ? (
          <>
            <Field label="E-mail">
              {(id) => (
                <input
                  id={id}
                  type="email"
                  autoComplete="username"
                  required
                  value={email}
                  onChange={(e) => setEmail(e.target.value)}
                />
              )}
            </Field>
            <Field label="Password">
              {(id) => (
                <input
                  id={id}
                  type="password"
                  autoComplete="current-password"
                  required
                  value={password}
                  onChange={(e) => setPassword(e.target.value)}
                />
              )}
            </Field>
          </>
        ) : (
          <CodeField
            label="6-digit code from your authenticator app"
            hint="Two-factor authentication is on for this account."
            inputRef={totpInput}
            value={totp}
            onChange={setTotp}
          />
        )}
        <FormError context="login" />
        <SubmitButton className="btn btn-primary btn-block" pendingLabel="Signing in…">
          {needsTotp ? "Verify and sign in" : "Sign in"}
        </SubmitButton>
      </Form>
      <p className="auth-links">
        <Link to="/signup">Create an account</Link> · <Link to="/forgot-password">Forgot your password?</Link>
      </p>
    </section>
  );
}
