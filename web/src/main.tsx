import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { lazy, type ReactNode, StrictMode, Suspense } from "react";
import { createRoot } from "react-dom/client";
import { BrowserRouter, Navigate, Route, Routes, useLocation } from "react-router-dom";
import { ApiError } from "./api/client";
import { Layout } from "./components/Layout";
import { Loading } from "./components/ui";
import { SessionProvider, useSession } from "./session";
import "./styles.css";

// Every screen is its own chunk: the first screen loads only the shell and the screen it shows.
const SignIn = lazy(() => import("./screens/SignIn"));
const SignUp = lazy(() => import("./screens/SignUp"));
const ForgotPassword = lazy(() => import("./screens/ForgotPassword"));
const ResetPassword = lazy(() => import("./screens/ResetPassword"));
const Overview = lazy(() => import("./screens/Overview"));
const Transactions = lazy(() => import("./screens/Transactions"));
const TransactionDetail = lazy(() => import("./screens/TransactionDetail"));
const Sessions = lazy(() => import("./screens/Sessions"));
const Withdrawals = lazy(() => import("./screens/Withdrawals"));
const Payouts = lazy(() => import("./screens/Payouts"));
const Webhooks = lazy(() => import("./screens/Webhooks"));
const ApiKeys = lazy(() => import("./screens/ApiKeys"));
const Settings = lazy(() => import("./screens/Settings"));
const MailOutbox = lazy(() => import("./screens/MailOutbox"));
const AuditLog = lazy(() => import("./screens/AuditLog"));
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

function RequireSession({ children }: { children: ReactNode }) {
  const { me, loading } = useSession();
  const location = useLocation();
  if (loading) return <Loading label="Loading your account…" />;
  if (!me) return <Navigate to="/login" replace state={{ from: location.pathname + location.search }} />;
  if (me.user.role === "admin") return <AdminHome />;
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
        <Route
          path="/"
          element={
            <RequireSession>
              <Overview />
            </RequireSession>
          }
        />
        <Route
          path="/transactions"
          element={
            <RequireSession>
              <Transactions />
            </RequireSession>
          }
        />
        <Route
          path="/transactions/:id"
          element={
            <RequireSession>
              <TransactionDetail />
            </RequireSession>
          }
        />
        <Route
          path="/sessions"
          element={
            <RequireSession>
              <Sessions />
            </RequireSession>
          }
        />
        <Route
          path="/withdrawals"
          element={
            <RequireSession>
              <Withdrawals />
            </RequireSession>
          }
        />
        <Route
          path="/payouts"
          element={
            <RequireSession>
              <Payouts />
            </RequireSession>
          }
        />
        <Route
          path="/webhooks"
          element={
            <RequireSession>
              <Webhooks />
            </RequireSession>
          }
        />
        <Route
          path="/api-keys"
          element={
            <RequireSession>
              <ApiKeys />
            </RequireSession>
          }
        />
        <Route
          path="/settings"
          element={
            <RequireSession>
              <Settings />
            </RequireSession>
          }
        />
        <Route
          path="/audit-log"
          element={
            <RequireSession>
              <AuditLog />
            </RequireSession>
          }
        />
        <Route
          path="/mail"
          element={
            <RequireSession>
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
