import type * as React from "react";
import type { AuthState, ClientAuth } from "./auth-types.js";
import { argsJson as toArgsJson } from "./call-args.js";
import type { PaginatedQuery, PaginatedQueryState } from "./paginated-query.js";
import type { ReactHooks, ReactModuleRef, SignInButtonProps } from "./react-types.js";
import type { SyncConnection } from "./sync-connection.js";

/** An input's change event, as far as the button reads it (the SDK compiles without the DOM library). */
type InputChange = { target: { value: string } };

/** The React module (a peer dependency), passed in so the client itself never requires it. */
export type ReactModule = typeof React;

/** What the hooks need from the client. */
export interface HookSources {
  connection: SyncConnection;
  auth: ClientAuth;
  mutation: (name: string, args?: unknown) => Promise<unknown>;
  paginatedQuery: (
    name: string,
    args: Record<string, unknown>,
    options: { initialNumItems: number },
  ) => PaginatedQuery;
}

function need(react: ReactModule | null): ReactModule {
  if (!react) throw new Error("The platform/client React hooks need the react package: npm install react.");
  return react;
}

/** What every hook receives: React (or null when it is not installed) and the client's parts. */
interface Bound {
  react: ReactModule | null;
  sources: HookSources;
}

function useClientQuery({ react, sources }: Bound, name: string, args?: unknown): unknown {
  const R = need(react);
  const argsJson = args === "skip" ? null : toArgsJson(args, `query ${name}`);
  const subscribe = R.useCallback(
    (onChange: () => void) =>
      argsJson === null ? () => {} : sources.connection.subscribe(name, argsJson, onChange),
    [sources, name, argsJson],
  );
  const snapshot = R.useCallback(
    () => (argsJson === null ? undefined : sources.connection.current(name, argsJson)),
    [sources, name, argsJson],
  );
  const result = R.useSyncExternalStore(subscribe, snapshot, snapshot);
  if (result && "error" in result) throw result.error;
  return result?.value;
}

function useClientMutation({ react, sources }: Bound, name: string) {
  const R = need(react);
  return R.useCallback((args?: unknown) => sources.mutation(name, args), [sources, name]);
}

function useClientPaginatedQuery(
  { react, sources }: Bound,
  name: string,
  args: Record<string, unknown>,
  options: { initialNumItems: number },
): PaginatedQueryState<unknown> {
  const R = need(react);
  const argsJson = toArgsJson(args, `query ${name}`);
  const query = R.useMemo(
    () =>
      sources.paginatedQuery(name, JSON.parse(argsJson) as Record<string, unknown>, {
        initialNumItems: options.initialNumItems,
      }),
    [sources, name, argsJson, options.initialNumItems],
  );
  const subscribe = R.useCallback((onChange: () => void) => query.subscribe(onChange), [query]);
  const snapshot = R.useCallback(() => query.getSnapshot(), [query]);
  const state = R.useSyncExternalStore(subscribe, snapshot, snapshot);
  if (state.error) throw state.error;
  return state;
}

function useClientAuth({ react, sources }: Bound): AuthState {
  const R = need(react);
  R.useEffect(() => {
    void sources.auth.ready();
  }, [sources]);
  return R.useSyncExternalStore(
    (onChange) => sources.auth.subscribe(onChange),
    () => sources.auth.getState(),
    () => sources.auth.getState(),
  );
}

/** The sign-in button: email, then the emailed code; "Signed in as ..." with sign-out afterwards. */
function PlatformSignInButton(props: SignInButtonProps & { bound: Bound }): React.ReactElement {
  const { bound } = props;
  const R = need(bound.react);
  const auth = bound.sources.auth;
  const h = R.createElement;
  const state = useClientAuth(bound);
  const [step, setStep] = R.useState<"idle" | "email" | "code">("idle");
  const [email, setEmail] = R.useState("");
  const [code, setCode] = R.useState("");
  const [busy, setBusy] = R.useState(false);
  const [problem, setProblem] = R.useState<string | null>(null);
  const run = (work: () => Promise<void>) => {
    setBusy(true);
    setProblem(null);
    work()
      .catch((error: unknown) => setProblem((error as Error).message))
      .finally(() => setBusy(false));
  };
  const className = props.className ?? "platform-sign-in";
  if (state.isSignedIn) {
    return h(
      "span",
      { className },
      `Signed in as ${state.identity?.email ?? state.identity?.userId ?? ""} `,
      h("button", { type: "button", onClick: () => run(() => auth.signOut()) }, "Sign out"),
    );
  }
  const alert = problem ? h("p", { role: "alert" }, problem) : null;
  if (step === "idle") {
    return h(
      "span",
      { className },
      h("button", { type: "button", onClick: () => setStep("email") }, props.label ?? "Sign in"),
      state.error ? h("p", { role: "alert" }, state.error.message) : null,
    );
  }
  /** One step of the flow: a form with one input, a submit button and the last problem. */
  const stepForm = (input: Record<string, unknown>, button: string, submit: () => Promise<void>) =>
    h(
      "form",
      {
        className,
        onSubmit: (event: React.FormEvent) => {
          event.preventDefault();
          run(submit);
        },
      },
      h("input", { required: true, ...input }),
      h("button", { type: "submit", disabled: busy }, button),
      alert,
    );
  if (step === "email") {
    return stepForm(
      {
        type: "email",
        name: "email",
        "aria-label": "Email",
        placeholder: "you@example.com",
        value: email,
        onChange: (event: InputChange) => setEmail(event.target.value),
      },
      "Send code",
      async () => {
        await auth.startEmailSignIn(email);
        setStep("code");
      },
    );
  }
  return stepForm(
    {
      name: "code",
      "aria-label": "Code",
      inputMode: "numeric",
      autoComplete: "one-time-code",
      placeholder: "Code from the email",
      value: code,
      onChange: (event: InputChange) => setCode(event.target.value),
    },
    "Verify",
    async () => {
      await auth.verifyEmailCode(email, code.trim());
      setStep("idle");
      setCode("");
    },
  );
}

/**
 * Binds the hooks to one client. The hooks themselves live at module level (stable identities);
 * each client only closes over its own connection and auth. Without React they throw a message
 * saying to install it.
 */
export function createHooks(reactModule: ReactModuleRef | null, sources: HookSources): ReactHooks {
  const react = reactModule as ReactModule | null;
  const bound: Bound = { react, sources };
  return {
    useQuery: (name: string, args?: unknown) => useClientQuery(bound, name, args),
    useMutation: (name: string) => useClientMutation(bound, name),
    usePaginatedQuery: (name: string, args: Record<string, unknown>, options: { initialNumItems: number }) =>
      useClientPaginatedQuery(bound, name, args, options),
    useAuth: () => useClientAuth(bound),
    // biome-ignore lint/correctness/noComponentHookFactories: made once per client (clients live as long as the app), so React sees one stable component.
    SignInButton: (props: SignInButtonProps) =>
      need(react).createElement(PlatformSignInButton, { ...props, bound }),
  } as unknown as ReactHooks;
}
