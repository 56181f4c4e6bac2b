import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { lazy, type ReactNode, StrictMode, Suspense } from "react";
import { createRoot } from "react-dom/client";
import { BrowserRouter, Navigate, Route, Routes, useLocation } from "react-router-dom";
import { ApiError } from "./api/client";
import { Layout } from "./components/Layout";
import { Loading, Notice, PageHeader } from "./components/ui";
import { can, type Permission } from "./lib/permissions";
import { SessionProvider, useSession } from "./session";
import "./styles.css";

// Every screen is its own chunk: the first screen loads only the shell and the screen it shows.
const SignIn = lazy(() => import("./screens/SignIn"));
const SignUp = lazy(() => import("./screens/SignUp"));
const ForgotPassword = lazy(() => import("./screens/ForgotPassword"));
const ResetPassword = lazy(() => import("./screens/ResetPassword"));
const AcceptInvite = lazy(() => import("./screens/AcceptInvite"));
const Overview = lazy(() => import("./screens/Overview"));
const Transactions = lazy(() => import("./screens/Transactions"));
const TransactionDetail = lazy(() => import("./screens/TransactionDetail"));
const Sessions = lazy(() => import("./screens/Sessions"));
const PaymentLinks = lazy(() => import("./screens/PaymentLinks"));
const Withdrawals = lazy(() => import("./screens/Withdrawals"));
const Payouts = lazy(() => import("./screens/Payouts"));
const Webhooks = lazy(() => import("./screens/Webhooks"));
const ApiKeys = lazy(() => import("./screens/ApiKeys"));
const Settings = lazy(() => import("./screens/Settings"));
const MailOutbox = lazy(() => import("./screens/MailOutbox"));
const AuditLog = lazy(() => import("./screens/AuditLog"));
const Team = lazy(() => import("./screens/Team"));
const AdminHome = lazy(() => import("./screens/AdminHome"));

const queryClient = new QueryClient({
  defaultOptions: {
    queries: {
      staleTime: 5_000,
      refetchOnWindowFocus: true,
      retry: (count, error) =>
        !(error instanceof ApiError && error.status > 0 && error.status < 500) && count < 2,
    },
  },
});

/** A screen the member's role cannot open (a link or a bookmark): said plainly, no 403 to read. */
function NotAllowed({ role }: { role: string | null }) {
  return (
    <>
      <PageHeader title="Not available" />
      <Notice kind="warning">
        Your role{role ? ` (${role})` : ""} can't open this screen. An owner or admin of your team can change
        your role.
      </Notice>
    </>
  );
}

/** Signed in, and (`permission`) allowed to see the screen in the current environment. */
function RequireSession({ children, permission }: { children: ReactNode; permission?: Permission }) {
  const { me, loading } = useSession();
  const location = useLocation();
  if (loading) return <Loading label="Loading your account…" />;
  if (!me) return <Navigate to="/login" replace state={{ from: location.pathname + location.search }} />;
  if (me.user.role === "admin") return <AdminHome />;
  if (permission && !can(me.permissions, permission))
    return (
      <Layout>
        <NotAllowed role={me.user.memberRole} />
      </Layout>
    );
  return <Layout>{children}</Layout>;
}

function Guest({ children }: { children: ReactNode }) {
  const { me, loading } = useSession();
  if (loading) return <Loading label="Loading…" />;
  if (me) return <Navigate to="/" replace />;
  return <div className="guest">{children}</div>;
}

function App() {
  const fallback = <Loading />;
  return (
    <Suspense fallback={fallback}>
      <Routes>
        <Route
          path="/login"
          element={
            <Guest>
              <SignIn />
            </Guest>
          }
        />
        <Route
          path="/signup"
          element={
            <Guest>
              <SignUp />
            </Guest>
          }
        />
        <Route
          path="/forgot-password"
          element={
            <Guest>
              <ForgotPassword />
            </Guest>
          }
        />
        <Route path="/reset-password" element={<ResetPassword />} />
        <Route path="/accept-invite" element={<AcceptInvite />} />
        <Route
          path="/"
          element={
            <RequireSession permission="money:read">
              <Overview />
            </RequireSession>
          }
        />
        <Route
          path="/transactions"
          element={
            <RequireSession permission="money:read">
              <Transactions />
            </RequireSession>
          }
        />
        <Route
          path="/transactions/:id"
          element={
            <RequireSession permission="money:read">
              <TransactionDetail />
            </RequireSession>
          }
        />
        <Route
          path="/sessions"
          element={
            <RequireSession permission="money:read">
              <Sessions />
            </RequireSession>
          }
        />
        <Route
          path="/payment-links"
          element={
            <RequireSession permission="money:read">
              <PaymentLinks />
            </RequireSession>
          }
        />
        <Route
          path="/withdrawals"
          element={
            <RequireSession permission="money:read">
              <Withdrawals />
            </RequireSession>
          }
        />
        <Route
          path="/payouts"
          element={
            <RequireSession permission="money:read">
              <Payouts />
            </RequireSession>
          }
        />
        <Route
          path="/webhooks"
          element={
            <RequireSession permission="webhooks:read">
              <Webhooks />
            </RequireSession>
          }
        />
        <Route
          path="/api-keys"
          element={
            <RequireSession permission="api_keys:read">
              <ApiKeys />
            </RequireSession>
          }
        />
        <Route
          path="/settings"
          element={
            <RequireSession permission="settings:read">
              <Settings />
            </RequireSession>
          }
        />
        <Route
          path="/audit-log"
          element={
            <RequireSession permission="audit:read">
              <AuditLog />
            </RequireSession>
          }
        />
        <Route
          path="/team"
          element={
            <RequireSession permission="members:read">
              <Team />
            </RequireSession>
          }
        />
        <Route
          path="/mail"
          element={
            <RequireSession permission="dev_mail:read">
              <MailOutbox />
            </RequireSession>
          }
        />
        <Route path="*" element={<Navigate to="/" replace />} />
      </Routes>
    </Suspense>
  );
}

const root = document.getElementById("root");
if (root) {
  createRoot(root).render(
    <StrictMode>
      <QueryClientProvider client={queryClient}>
        <BrowserRouter>
          <SessionProvider>
            <App />
          </SessionProvider>
        </BrowserRouter>
      </QueryClientProvider>
    </StrictMode>,
  );
}
