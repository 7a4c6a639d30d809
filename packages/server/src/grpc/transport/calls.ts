import { EventEmitter } from "node:events";
import type { IncomingHttpHeaders, ServerHttp2Stream } from "node:http2";
import type { Framed } from "./framing.ts";

/** A failed call's status: the gRPC code and its message (sent as grpc-message). */
export interface GrpcError {
  readonly code: number;
  readonly details: string;
}

/** A unary handler's answer: the response message, its bytes, or its bytes already framed. */
export type UnaryCallback = (error: GrpcError | null, response?: unknown) => void;

export type UnaryHandler = (call: UnaryCall, callback: UnaryCallback) => void;
export type StreamHandler = (call: StreamCall) => void;

/** What every call knows: its request headers, its deadline and whether it was cancelled. */
abstract class CallBase {
  /** Set when the deadline passed, the client reset the stream or reading its messages failed. */
  aborted = false;
  /** Set once the server has sent the call's status. */
  finished = false;

  constructor(
    readonly stream: ServerHttp2Stream,
    private readonly headers: IncomingHttpHeaders,
    /** performance.now() time of the grpc-timeout deadline, or undefined without one. */
    readonly deadline: number | undefined,
  ) {}

  /** A request metadata value (the first one of a repeated key). */
  header(name: string): string | undefined {
    const v = this.headers[name];
    return Array.isArray(v) ? v[0] : v;
  }

  /**
   * True once the call can no longer be answered before it is: the client reset the stream or
   * went away, or the deadline passed. Read, not listened for: a unary call costs no listener.
   */
  get cancelled(): boolean {
    return this.aborted || (!this.finished && (this.stream.destroyed || this.stream.closed));
  }
}

/** One unary call: its request message's bytes (a view of what arrived), answered once. */
export class UnaryCall extends CallBase {
  constructor(
    stream: ServerHttp2Stream,
    headers: IncomingHttpHeaders,
    deadline: number | undefined,
    readonly request: Buffer,
  ) {
    super(stream, headers, deadline);
  }
}

/**
 * A bidirectional streaming call, as an event emitter: "data" (each request message's bytes),
 * "end" (the client half-closed), "cancelled" (reset, gone or past its deadline before the server
 * ended it). write() sends one message, end() the OK status, fail() an error status.
 */
export class StreamCall extends CallBase {
  private readonly events = new EventEmitter();

  constructor(
    stream: ServerHttp2Stream,
    headers: IncomingHttpHeaders,
    deadline: number | undefined,
    private readonly sink: StreamSink,
  ) {
    super(stream, headers, deadline);
  }

  on(event: "data", listener: (message: Buffer) => void): this;
  on(event: "end" | "cancelled", listener: () => void): this;
  on(event: string, listener: (message: Buffer) => void): this {
    this.events.on(event, listener);
    return this;
  }

  /** The server's side: a request message arrived, the client half-closed, the call was cancelled. */
  emit(event: "data", message: Buffer): void;
  emit(event: "end" | "cancelled"): void;
  emit(event: string, message?: Buffer): void {
    this.events.emit(event, message);
  }

  write(message: Uint8Array | Framed): void {
    this.sink.write(this, message);
  }

  end(): void {
    this.sink.finish(this, null);
  }

  fail(error: GrpcError): void {
    this.sink.finish(this, error);
  }
}

/** How a stream call's messages and status reach the wire (the server's side of it). */
export interface StreamSink {
  write(call: StreamCall, message: Uint8Array | Framed): void;
  finish(call: StreamCall, error: GrpcError | null): void;
}
