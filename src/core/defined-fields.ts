/**
 * Under `exactOptionalPropertyTypes` an options object may leave a field out but not set it to `undefined`,
 * so a field handed on from a caller's options is copied only when it is there. These two do that copying.
 */

/** `{ signal }` when there is one, `{}` otherwise: from a signal, or from options that may carry one. */
export function signalOf(from: AbortSignal | { readonly signal?: AbortSignal | undefined } | undefined): {
  signal?: AbortSignal;
} {
  // Told apart by shape, not instanceof: a signal from another realm (a test environment, a polyfill) is one too.
  const signal = from !== undefined && "aborted" in from ? from : from?.signal;
  return signal === undefined ? {} : { signal };
}

/** The fields that may be undefined become optional, without `undefined`; the others stay as they are. */
export type DefinedFields<T> = { [K in keyof T as undefined extends T[K] ? never : K]: T[K] } & {
  [K in keyof T as undefined extends T[K] ? K : never]?: Exclude<T[K], undefined>;
};

/** `fields` without the ones that are undefined, e.g. `definedFields({ title: options.title, signal })`. */
export function definedFields<T extends object>(fields: T): DefinedFields<T> {
  return Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined)) as DefinedFields<T>;
}
