import { useCallback, useEffect, useState } from "react";

/** What a page loaded: its data, or the message of why it failed, and a way to load it again. */
export interface Loaded<T> {
  /**
   * The answer for the current key, undefined while a new key loads: a page never shows, edits or
   * saves one key's data as another's (row B's panel filled with row A's fields).
   */
  data: T | undefined;
  /**
   * The newest answer of any key, kept while the next key loads: for views where the previous
   * answer is harmless to show meanwhile (a list while its next page loads), never for editing.
   */
  latest: T | undefined;
  error: string | undefined;
  loading: boolean;
  reload: () => void;
}

/** The hook's state: the newest answer and the key it was loaded for, and whether a run is out. */
export interface LoadState<T> {
  key: string | undefined;
  data?: T;
  error?: string;
  running: boolean;
}

/**
 * What `state` shows for `key`: its data and error only if they were loaded for `key` (a run of a
 * new key has not even started on the render where the key changes), and loading until they are.
 */
export function loadedFor<T>(state: LoadState<T>, key: string): Omit<Loaded<T>, "reload"> {
  const current = state.key === key;
  return {
    data: current ? state.data : undefined,
    latest: state.data,
    error: current ? state.error : undefined,
    loading: state.running || !current,
  };
}

/**
 * Runs `load` when `key` changes (and on `reload`), keeping only the answer of the latest run, so a
 * slow answer to an old filter never replaces a newer one.
 */
export function useLoad<T>(load: () => Promise<T>, key: string): Loaded<T> {
  const [state, setState] = useState<LoadState<T>>({ key: undefined, running: true });
  const [round, setRound] = useState(0);
  // biome-ignore lint/correctness/useExhaustiveDependencies: `key` names everything `load` reads
  useEffect(() => {
    let current = true;
    setState((previous) => ({ ...previous, running: true }));
    load().then(
      (data) => current && setState({ key, data, running: false }),
      (error: unknown) =>
        current &&
        setState({ key, error: error instanceof Error ? error.message : String(error), running: false }),
    );
    return () => {
      current = false;
    };
  }, [key, round]);
  const reload = useCallback(() => setRound((n) => n + 1), []);
  return { ...loadedFor(state, key), reload };
}
