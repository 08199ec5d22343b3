import { fork } from 'node:child_process';
import { resolve } from 'node:path';

/** A request as the receiver process saw it: `at` on that process's clock (only differences mean anything). */
export interface Arrival {
  path: string;
  at: number;
  event_id: string;
  attempt: number;
  /** The delivery ids of a batch request; undefined for a single delivery. */
  deliveries?: string[];
}

export interface ReceiverProcess {
  url: string;
  /** Arrivals so far at `path`, in the order they came. */
  at(path: string): Arrival[];
  close(): Promise<void>;
}

/** Starts receiver-child.ts: a real webhook target answering 200, whose clock the platform's work cannot stall. */
export async function startReceiverProcess(): Promise<ReceiverProcess> {
  const child = fork(resolve(import.meta.dirname, 'receiver-child.ts'), [], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const arrivals: Arrival[] = [];
  const url = await new Promise<string>((ready, fail) => {
    child.once('exit', (code) => fail(new Error(`the receiver process exited (${code}) before listening`)));
    child.on('message', (m: { url?: string } & Partial<Arrival>) => {
      if (m.url !== undefined) ready(m.url);
      else arrivals.push(m as Arrival);
    });
  });
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  return {
    url,
    at: (path) => arrivals.filter((a) => a.path === path),
    async close() {
      if (child.connected) child.disconnect();
      await Promise.race([exited, new Promise((r) => setTimeout(r, 3000))]);
      if (child.exitCode === null) child.kill();
    },
  };
}
