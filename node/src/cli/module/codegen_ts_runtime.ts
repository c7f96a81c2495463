// ---- Checking and converting values (the same in every generated client)

/** A value that does not match the module's schema; `path` says where (e.g. `game.stake`). */
export class SchemaError extends Error {
  readonly path: string;

  constructor(path: string, message: string) {
    super(`${path}: ${message}`);
    this.name = 'SchemaError';
    this.path = path;
  }
}

/** An op whose transaction is in a block but failed (`receipt.ok` false; `receipt.error` says why). */
export class OpRefused extends Error {
  readonly txid: string;
  readonly receipt: Receipt;

  constructor(txid: string, receipt: Receipt) {
    super(`${MODULE} op refused: ${receipt.error ?? 'failed'} (txid ${txid})`);
    this.name = 'OpRefused';
    this.txid = txid;
    this.receipt = receipt;
  }
}

/** A schema type as the checks walk it: t the type; o optional; n nullable; i items; f fields; v map values; e enum values. */
type _Ty = {
  readonly t: string;
  readonly o?: boolean;
  readonly n?: boolean;
  readonly i?: _Ty;
  readonly f?: _Fields;
  readonly v?: _Ty;
  readonly e?: readonly string[];
};
type _Fields = ReadonlyArray<readonly [string, _Ty]>;

const _AMOUNT = /^(0|[1-9][0-9]*)$/;
// Lowercase, whole bytes: the schema's `hex`.
const _HEX = /^(?:[0-9a-f]{2})*$/;
const _IDENT = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

function _at(path: string, name: string): string {
  return _IDENT.test(name) ? `${path}.${name}` : `${path}[${JSON.stringify(name)}]`;
}

function _show(v: unknown): string {
  if (v === null) return 'null';
  if (v === undefined) return 'nothing';
  if (Array.isArray(v)) return 'an array';
  switch (typeof v) {
    case 'string': return JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v);
    case 'number': case 'boolean': return String(v);
    case 'bigint': return `${v}n`;
    default: return `a value of type ${typeof v}`;
  }
}

function _expected(ty: _Ty, encoding: boolean): string {
  switch (ty.t) {
    case 'u32': return 'an integer from 0 to 4294967295';
    case 'u64': return 'an integer from 0 to 2^53-1';
    case 'i64': return 'an integer from -(2^53-1) to 2^53-1';
    case 'amount': return encoding ? 'a bigint of base units, at least 0' : 'a decimal string of base units';
    case 'hex': return 'a hex string';
    case 'bool': return 'true or false';
    case 'enum': return `one of ${(ty.e ?? []).map((x) => JSON.stringify(x)).join(', ')}`;
    case 'array': return 'an array';
    case 'object': case 'map': return 'an object';
    default: return `a ${ty.t}`;
  }
}

function _record(v: unknown, path: string): Record<string, unknown> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new SchemaError(path, `expected an object, got ${_show(v)}`);
  return v as Record<string, unknown>;
}

function _own(o: Record<string, unknown>, name: string): unknown {
  const d = Object.getOwnPropertyDescriptor(o, name);
  return d === undefined ? undefined : d.value;
}

/** The checks shared by both directions; undefined when `v` is not a scalar of `ty`. */
function _scalar(ty: _Ty, v: unknown): { ok: true; value: unknown } | undefined {
  switch (ty.t) {
    case 'string': case 'address':
      return typeof v === 'string' ? { ok: true, value: v } : undefined;
    case 'hex':
      return typeof v === 'string' && _HEX.test(v) ? { ok: true, value: v } : undefined;
    case 'bool':
      return typeof v === 'boolean' ? { ok: true, value: v } : undefined;
    case 'u32':
      return typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= 4294967295 ? { ok: true, value: v } : undefined;
    case 'u64':
      return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 ? { ok: true, value: v } : undefined;
    case 'i64':
      return typeof v === 'number' && Number.isSafeInteger(v) ? { ok: true, value: v } : undefined;
    case 'enum':
      return typeof v === 'string' && (ty.e ?? []).includes(v) ? { ok: true, value: v } : undefined;
    case 'any':
      return { ok: true, value: v };
    default:
      return undefined;
  }
}

/** A JSON value read from the node, checked against `ty`; amounts become bigint. */
function _decode(ty: _Ty, v: unknown, path: string): unknown {
  if (v === null) {
    if (ty.n) return null;
    throw new SchemaError(path, 'is null');
  }
  switch (ty.t) {
    case 'amount':
      if (typeof v === 'string' && _AMOUNT.test(v)) return BigInt(v);
      break;
    case 'array':
      if (Array.isArray(v)) return v.map((x: unknown, i: number) => _decode(ty.i as _Ty, x, `${path}[${i}]`));
      break;
    case 'object':
      return _decodeFields(ty.f ?? [], v, path);
    case 'map':
      return Object.fromEntries(Object.entries(_record(v, path)).map(([k, x]) => [k, _decode(ty.v as _Ty, x, `${path}[${JSON.stringify(k)}]`)]));
    default: {
      const s = _scalar(ty, v);
      if (s !== undefined) return s.value;
    }
  }
  throw new SchemaError(path, `expected ${_expected(ty, false)}, got ${_show(v)}`);
}

/** The schema's fields of a JSON object, in schema order (others left out). */
function _decodeFields(fields: _Fields, v: unknown, path: string): Record<string, unknown> {
  const o = _record(v, path);
  const out: Array<[string, unknown]> = [];
  for (const [name, ty] of fields) {
    const x = _own(o, name);
    if (x === undefined) {
      if (ty.o) continue;
      throw new SchemaError(_at(path, name), 'is missing');
    }
    out.push([name, _decode(ty, x, _at(path, name))]);
  }
  return Object.fromEntries(out);
}

//@encode
/** A program's value checked against `ty`, as JSON carries it; bigint amounts become decimal strings. */
function _encode(ty: _Ty, v: unknown, path: string): unknown {
  if (v === null) {
    if (ty.n) return null;
    throw new SchemaError(path, 'is null');
  }
  switch (ty.t) {
    case 'amount':
      if (typeof v === 'bigint' && v >= BigInt(0)) return v.toString();
      break;
    case 'array':
      if (Array.isArray(v)) return v.map((x: unknown, i: number) => _encode(ty.i as _Ty, x, `${path}[${i}]`));
      break;
    case 'object':
      return _encodeFields(ty.f ?? [], v, path);
    case 'map':
      return Object.fromEntries(Object.entries(_record(v, path)).map(([k, x]) => [k, _encode(ty.v as _Ty, x, `${path}[${JSON.stringify(k)}]`)]));
    default: {
      const s = _scalar(ty, v);
      if (s !== undefined) return s.value;
    }
  }
  throw new SchemaError(path, `expected ${_expected(ty, true)}, got ${_show(v)}`);
}

/** The schema's fields of a program's object, in schema order (undefined ones left out). */
function _encodeFields(fields: _Fields, v: unknown, path: string): Record<string, unknown> {
  const o = _record(v, path);
  const out: Array<[string, unknown]> = [];
  for (const [name, ty] of fields) {
    const x = _own(o, name);
    if (x === undefined) {
      if (ty.o) continue;
      throw new SchemaError(_at(path, name), 'is missing');
    }
    out.push([name, _encode(ty, x, _at(path, name))]);
  }
  return Object.fromEntries(out);
}

//@op
/** An op as sent: `kind` first, then its fields in schema order. */
function _op<T>(kind: string, fields: _Fields, args: unknown): T {
  return { kind, ..._encodeFields(fields, args, kind) } as unknown as T;
}

//@query
/** A view's query parameters (`chain.game`): numbers stay numbers, the rest strings; unset ones left out. */
function _query(fields: _Fields, v: unknown, path: string): Record<string, string | number> {
  const o = _record(v, path);
  const out: Record<string, string | number> = {};
  for (const [name, ty] of fields) {
    const x = _own(o, name);
    if (x === undefined || x === null) {
      if (ty.o || ty.n) continue;
      throw new SchemaError(_at(path, name), 'is missing');
    }
    const e = _encode(ty, x, _at(path, name));
    out[name] = typeof e === 'number' ? e : String(e);
  }
  return out;
}
