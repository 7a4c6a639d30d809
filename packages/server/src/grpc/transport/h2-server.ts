import http2, {
  type Http2SecureServer,
  type Http2Server,
  type Http2Session,
  type IncomingHttpHeaders,
  type ServerHttp2Stream,
} from "node:http2";
import { gunzipSync, inflateSync } from "node:zlib";
import { status } from "@grpc/grpc-js";
import {
  type GrpcError,
  StreamCall,
  type StreamHandler,
  type StreamSink,
  UnaryCall,
  type UnaryHandler,
} from "./calls.ts";
import { Framed, MessageReader, OversizeMessage, type ReadMessage, frame } from "./framing.ts";
import { encodeGrpcMessage, parseTimeout } from "./headers.ts";

/** One method of the service: its handler and how a handler's non-byte answer is encoded. */
export type Route =
  | { readonly kind: "unary"; readonly handler: UnaryHandler; readonly serialize: (value: unknown) => Uint8Array }
  | { readonly kind: "stream"; readonly handler: StreamHandler };

export interface H2GrpcOptions {
  /** Largest message received or sent. */
  readonly maxMessageBytes: number;
  /** TLS instead of cleartext HTTP/2 (h2c); `ca` asks for and checks client certificates. */
  readonly tls?: {
    readonly cert: Uint8Array | string;
    readonly key: Uint8Array | string;
    readonly ca?: Uint8Array | string;
  };
}

const RESPONSE_HEADERS = { ":status": 200, "content-type": "application/grpc" } as const;
const OK_TRAILERS = { "grpc-status": "0" } as const;
const WAIT_FOR_TRAILERS = { waitForTrailers: true } as const;
const END_STREAM = { endStream: true } as const;
const noop = () => {};

function sendOkTrailers(this: ServerHttp2Stream): void {
  this.sendTrailers(OK_TRAILERS);
}

/** The status trailers of an error (grpc-message percent-encoded as gRPC requires). */
function errorTrailers(error: GrpcError): Record<string, string> {
  return { "grpc-status": String(error.code), "grpc-message": encodeGrpcMessage(error.details) };
}

function asPem(pem: Uint8Array | string): string | Buffer {
  return typeof pem === "string" ? pem : Buffer.from(pem);
}

function gone(stream: ServerHttp2Stream): boolean {
  return stream.destroyed || stream.closed;
}

/**
 * gRPC over node:http2 (which Bun implements natively), for the methods of one port: unary calls
 * and bidirectional streams, deadlines from grpc-timeout (DEADLINE_EXCEEDED when they pass
 * unanswered), cancellation when the client resets the stream, message caps both ways, gzip and
 * deflate request messages, errors as grpc-status / grpc-message trailers. It replaces
 * @grpc/grpc-js's server, whose own per-call work cost about as much again as node:http2's
 * (grpc-js stays the client).
 */
export class H2GrpcServer implements StreamSink {
  private readonly server: Http2Server | Http2SecureServer;
  private readonly sessions = new Set<Http2Session>();
  private calls = 0;

  constructor(
    private readonly routes: ReadonlyMap<string, Route>,
    private readonly options: H2GrpcOptions,
  ) {
    const settings = { maxHeaderListSize: 16384 };
    const tls = options.tls;
    this.server = tls
      ? http2.createSecureServer({
          cert: asPem(tls.cert),
          key: asPem(tls.key),
          ...(tls.ca ? { ca: asPem(tls.ca), requestCert: true, rejectUnauthorized: true } : {}),
          settings,
        })
      : http2.createServer({ settings });
    this.server.on("session", (session: Http2Session) => {
      this.sessions.add(session);
      session.on("close", () => this.sessions.delete(session));
      session.on("error", noop);
    });
    this.server.on("stream", (stream: ServerHttp2Stream, headers: IncomingHttpHeaders) => this.accept(stream, headers));
  }

  /** Calls received and not yet answered (unary) or ended (streams). */
  get inFlight(): number {
    return this.calls;
  }

  listen(host: string, port: number): Promise<number> {
    return new Promise((resolve, reject) => {
      const onError = (error: Error) => reject(error);
      this.server.once("error", onError);
      this.server.listen(port, host, () => {
        this.server.removeListener("error", onError);
        resolve((this.server.address() as { port: number }).port);
      });
    });
  }

  /**
   * Stops accepting connections and asks each open one to finish its calls (GOAWAY); what still
   * runs after `graceMs` is cut, and `force` cuts at once.
   */
  stop(force: boolean, graceMs: number): Promise<void> {
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    const destroyAll = () => {
      for (const s of this.sessions) s.destroy();
    };
    if (force) destroyAll();
    else for (const s of this.sessions) s.close();
    const timer = setTimeout(destroyAll, force ? 0 : graceMs);
    return closed.then(() => clearTimeout(timer));
  }

  private accept(stream: ServerHttp2Stream, headers: IncomingHttpHeaders): void {
    stream.on("error", noop);
    if (headers[":method"] !== "POST") {
      stream.respond({ ":status": 405 }, END_STREAM);
      return;
    }
    const contentType = headers["content-type"];
    if (typeof contentType !== "string" || !contentType.startsWith("application/grpc")) {
      stream.respond({ ":status": 415 }, END_STREAM);
      return;
    }
    const path = headers[":path"] as string;
    const route = this.routes.get(path);
    if (!route) {
      this.refuse(stream, { code: status.UNIMPLEMENTED, details: `no method ${path} on this server` });
      return;
    }
    const encoding = headers["grpc-encoding"];
    if (encoding !== undefined && encoding !== "identity" && encoding !== "gzip" && encoding !== "deflate") {
      this.refuse(stream, {
        code: status.UNIMPLEMENTED,
        details: `the message encoding "${encoding}" is not supported`,
      });
      return;
    }
    let deadline: number | undefined;
    const timeout = headers["grpc-timeout"];
    if (timeout !== undefined) {
      const ms = parseTimeout(String(timeout));
      if (ms === undefined) {
        this.refuse(stream, { code: status.INTERNAL, details: `grpc-timeout "${timeout}" is not a timeout` });
        return;
      }
      deadline = performance.now() + ms;
    }
    if (route.kind === "unary") this.readUnary(stream, headers, deadline, route);
    else this.openStream(stream, headers, deadline, route.handler);
  }

  /** A message's bytes as the handler reads them: decompressed when the client compressed it. */
  private messageOf(m: ReadMessage, encoding: string | string[] | undefined): Buffer {
    if (!m.compressed) return m.bytes;
    if (encoding === "gzip") return gunzipSync(m.bytes, { maxOutputLength: this.options.maxMessageBytes });
    if (encoding === "deflate") return inflateSync(m.bytes, { maxOutputLength: this.options.maxMessageBytes });
    throw Object.assign(new Error("a message is flagged compressed but the call names no grpc-encoding"), {
      code: status.INTERNAL,
    });
  }

  private readUnary(
    stream: ServerHttp2Stream,
    headers: IncomingHttpHeaders,
    deadline: number | undefined,
    route: Extract<Route, { kind: "unary" }>,
  ): void {
    const reader = new MessageReader(this.options.maxMessageBytes);
    const messages: ReadMessage[] = [];
    let refused = false;
    stream.on("data", (chunk: Buffer) => {
      if (refused) return;
      try {
        reader.push(chunk, messages);
      } catch (error) {
        refused = true;
        this.refuse(stream, this.readError(error));
      }
    });
    stream.on("end", () => {
      if (refused) return;
      if (messages.length !== 1 || reader.partial) {
        const details =
          messages.length === 0 ? "the call carried no request message" : "a unary call carried more than one message";
        this.refuse(stream, { code: status.INTERNAL, details });
        return;
      }
      let request: Buffer;
      try {
        request = this.messageOf(messages[0] as ReadMessage, headers["grpc-encoding"]);
      } catch (error) {
        this.refuse(stream, this.readError(error));
        return;
      }
      // Counted from here: a call reset while its request still arrives never reaches this.
      this.calls++;
      const call = new UnaryCall(stream, headers, deadline, request);
      const timer = deadline === undefined ? undefined : this.expireAt(call);
      const callback = (error: GrpcError | null, response?: unknown) => {
        if (call.finished) return;
        if (timer !== undefined) clearTimeout(timer);
        this.finishUnary(call, error, response, route.serialize);
      };
      try {
        route.handler(call, callback);
      } catch (error) {
        callback({ code: status.INTERNAL, details: (error as Error)?.message ?? String(error) });
      }
    });
  }

  /** The call's DEADLINE_EXCEEDED when its deadline passes unanswered. */
  private expireAt(call: UnaryCall | StreamCall): ReturnType<typeof setTimeout> {
    return setTimeout(
      () => {
        if (call.finished) return;
        call.aborted = true;
        if (call instanceof StreamCall) call.emit("cancelled");
        this.fail(call, { code: status.DEADLINE_EXCEEDED, details: "Deadline exceeded" });
      },
      Math.max(0, (call.deadline as number) - performance.now()),
    );
  }

  private finishUnary(
    call: UnaryCall,
    error: GrpcError | null,
    response: unknown,
    serialize: (value: unknown) => Uint8Array,
  ): void {
    if (error) {
      this.fail(call, error);
      return;
    }
    let framed: Framed;
    try {
      framed = this.framedOf(response, serialize);
    } catch (e) {
      this.fail(call, { code: (e as GrpcError).code ?? status.INTERNAL, details: (e as Error).message });
      return;
    }
    call.finished = true;
    this.calls--;
    const stream = call.stream;
    if (gone(stream)) return;
    stream.respond(RESPONSE_HEADERS, WAIT_FOR_TRAILERS);
    stream.on("wantTrailers", sendOkTrailers);
    stream.end(framed.bytes);
  }

  /** An answer as framed bytes, within the cap (RESOURCE_EXHAUSTED over it). */
  private framedOf(response: unknown, serialize: (value: unknown) => Uint8Array): Framed {
    const framed =
      response instanceof Framed ? response : frame(response instanceof Uint8Array ? response : serialize(response));
    if (framed.messageBytes > this.options.maxMessageBytes) {
      throw Object.assign(
        new Error(
          `the response message is ${framed.messageBytes} bytes, over this server's limit of ${this.options.maxMessageBytes} bytes`,
        ),
        { code: status.RESOURCE_EXHAUSTED },
      );
    }
    return framed;
  }

  /** Ends a call with an error status (trailers only when nothing was sent yet). */
  private fail(call: UnaryCall | StreamCall, error: GrpcError): void {
    if (call.finished) return;
    call.finished = true;
    this.calls--;
    const stream = call.stream;
    if (gone(stream)) return;
    if (stream.headersSent) {
      const trailers = errorTrailers(error);
      stream.on("wantTrailers", () => stream.sendTrailers(trailers));
      stream.end();
    } else {
      this.refuse(stream, error);
    }
  }

  /** A trailers-only answer: the error status in the response headers, the stream ended. */
  private refuse(stream: ServerHttp2Stream, error: GrpcError): void {
    if (gone(stream) || stream.headersSent) return;
    stream.respond({ ...RESPONSE_HEADERS, ...errorTrailers(error) }, END_STREAM);
  }

  private readError(error: unknown): GrpcError {
    if (error instanceof OversizeMessage) return { code: status.RESOURCE_EXHAUSTED, details: error.message };
    return { code: (error as GrpcError).code ?? status.INTERNAL, details: (error as Error).message };
  }

  private openStream(
    stream: ServerHttp2Stream,
    headers: IncomingHttpHeaders,
    deadline: number | undefined,
    handler: StreamHandler,
  ): void {
    this.calls++;
    const call = new StreamCall(stream, headers, deadline, this);
    const timer = deadline === undefined ? undefined : this.expireAt(call);
    const reader = new MessageReader(this.options.maxMessageBytes);
    const messages: ReadMessage[] = [];
    stream.on("close", () => {
      if (timer !== undefined) clearTimeout(timer);
      if (call.finished) return;
      call.finished = true;
      call.aborted = true;
      this.calls--;
      call.emit("cancelled");
    });
    try {
      handler(call);
    } catch (error) {
      this.fail(call, { code: status.INTERNAL, details: (error as Error)?.message ?? String(error) });
      return;
    }
    stream.on("data", (chunk: Buffer) => {
      if (call.finished) return;
      try {
        reader.push(chunk, messages);
        for (const m of messages) call.emit("data", this.messageOf(m, headers["grpc-encoding"]));
      } catch (error) {
        call.aborted = true;
        call.emit("cancelled");
        this.fail(call, this.readError(error));
      } finally {
        messages.length = 0;
      }
    });
    stream.on("end", () => {
      if (!call.finished) call.emit("end");
    });
  }

  write(call: StreamCall, message: Uint8Array | Framed): void {
    if (call.finished || gone(call.stream)) return;
    const stream = call.stream;
    let framed: Framed;
    try {
      framed = this.framedOf(message, (m) => m as Uint8Array);
    } catch (e) {
      call.aborted = true;
      call.emit("cancelled");
      this.fail(call, { code: (e as GrpcError).code, details: (e as Error).message });
      return;
    }
    if (!stream.headersSent) stream.respond(RESPONSE_HEADERS, WAIT_FOR_TRAILERS);
    stream.write(framed.bytes);
  }

  finish(call: StreamCall, error: GrpcError | null): void {
    if (error) {
      this.fail(call, error);
      return;
    }
    if (call.finished) return;
    call.finished = true;
    this.calls--;
    const stream = call.stream;
    if (gone(stream)) return;
    if (!stream.headersSent) stream.respond(RESPONSE_HEADERS, WAIT_FOR_TRAILERS);
    stream.on("wantTrailers", sendOkTrailers);
    stream.end();
  }
}
