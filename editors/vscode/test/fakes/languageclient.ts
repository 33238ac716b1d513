// A fake `vscode-languageclient/node` for test/extension.test.ts: it starts no process, records
// what the extension asked of it, and can be told to fail.

export const TransportKind = { stdio: 0, ipc: 1, pipe: 2, socket: 3 } as const;

export enum CloseAction {
  DoNotRestart = 1,
  Restart = 2,
}

export enum ErrorAction {
  Continue = 1,
  Shutdown = 2,
}

interface CloseHandlerResult {
  action: CloseAction;
  handled?: boolean;
}

export interface ErrorHandler {
  error(error: Error, message: unknown, count: number | undefined): { action: ErrorAction } | Promise<{ action: ErrorAction }>;
  closed(): CloseHandlerResult | Promise<CloseHandlerResult>;
}

export const DidChangeConfigurationNotification = {
  type: { method: "workspace/didChangeConfiguration" },
} as const;

export interface Notification {
  readonly method: string;
  readonly params: unknown;
}

export const clients: LanguageClient[] = [];

export const behaviour = {
  /** The next start() rejects with this. */
  failStart: undefined as Error | undefined,
  /** stop() rejects with this, as the real one does for a client that is not running. */
  failStop: undefined as Error | undefined,
  reset(): void {
    this.failStart = undefined;
    this.failStop = undefined;
    clients.length = 0;
  },
};

export class LanguageClient {
  state: "initial" | "running" | "startFailed" | "stopped" = "initial";
  readonly notifications: Notification[] = [];
  stops = 0;

  constructor(
    readonly id: string,
    readonly name: string,
    readonly serverOptions: { command: string; args?: string[]; transport?: number; options?: { env?: NodeJS.ProcessEnv } },
    readonly clientOptions: {
      documentSelector: { scheme: string; language: string }[];
      initializationOptions: unknown;
      outputChannel?: unknown;
      errorHandler?: ErrorHandler;
    },
  ) {
    clients.push(this);
  }

  async start(): Promise<void> {
    const failure = behaviour.failStart;
    behaviour.failStart = undefined;
    if (failure !== undefined) {
      this.state = "startFailed";
      throw failure;
    }
    this.state = "running";
  }

  /** What the real client's default handler does: restart a closed connection. */
  createDefaultErrorHandler(): ErrorHandler {
    return {
      error: () => ({ action: ErrorAction.Continue }),
      closed: () => ({ action: CloseAction.Restart }),
    };
  }

  isRunning(): boolean {
    return this.state === "running";
  }

  async stop(): Promise<void> {
    this.stops++;
    if (behaviour.failStop !== undefined) {
      throw behaviour.failStop;
    }
    if (this.state !== "running") {
      throw new Error(`Client is not running and can't be stopped. It's current state is: ${this.state}`);
    }
    this.state = "stopped";
  }

  async sendNotification(type: { method: string }, params: unknown): Promise<void> {
    if (this.state !== "running") {
      throw new Error("not running");
    }
    this.notifications.push({ method: type.method, params });
  }
}
