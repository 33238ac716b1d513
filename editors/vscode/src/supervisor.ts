// The language client's life: start, restart, stop, one at a time. Generic over what runs (a
// LanguageClient in the extension, a fake in tests), so it needs no vscode import.
//
// Its promises never reject: a start that fails leaves nothing running (the failure goes to
// `report`), and stopping what never started, or what fails to stop, is quietly nothing. So
// `deactivate()` cannot throw whatever state the client is in.

export interface Stoppable {
  stop(): Promise<void>;
}

export class Supervisor<T extends Stoppable> {
  private running: T | undefined;
  private queue: Promise<unknown> = Promise.resolve();
  private disposed = false;

  /**
   * `start` returns what it started, or undefined when it started nothing (it has said why).
   * `report` gets what went wrong while starting or stopping.
   */
  constructor(
    private readonly start: () => Promise<T | undefined>,
    private readonly report: (what: string, error: unknown) => void,
  ) {}

  /** What runs now, if anything. */
  get current(): T | undefined {
    return this.running;
  }

  private enqueue<R>(op: () => Promise<R>): Promise<R> {
    const next = this.queue.then(op, op);
    this.queue = next.catch(() => undefined);
    return next;
  }

  private async stopCurrent(): Promise<void> {
    const old = this.running;
    this.running = undefined;
    if (old === undefined) {
      return;
    }
    try {
      await old.stop();
    } catch (e) {
      // A client that is still starting or failed to start cannot be stopped: nothing to do.
      this.report("stopping the server", e);
    }
  }

  private async startNew(): Promise<T | undefined> {
    if (this.disposed) {
      return undefined;
    }
    try {
      this.running = await this.start();
    } catch (e) {
      this.running = undefined;
      this.report("starting the server", e);
    }
    return this.running;
  }

  /** Starts unless something runs already. */
  ensureStarted(): Promise<T | undefined> {
    return this.enqueue(async () => this.running ?? this.startNew());
  }

  /** Stops what runs, then starts anew. */
  restart(): Promise<T | undefined> {
    return this.enqueue(async () => {
      await this.stopCurrent();
      return this.startNew();
    });
  }

  /** Stops what runs, for good. Never rejects. */
  dispose(): Promise<void> {
    this.disposed = true;
    return this.enqueue(() => this.stopCurrent()).catch(() => undefined);
  }
}
