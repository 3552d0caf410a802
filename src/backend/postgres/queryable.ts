// The one thing of `pg` most files here need: something to run a query on (a pool, or a client held for a
// lock or a transaction). Named here so only the backend's entry imports the driver's types.

export interface QueryResult<R> {
  rows: R[];
  rowCount: number | null;
}

export interface Queryable {
  query<R = Record<string, unknown>>(text: string, values?: unknown[]): Promise<QueryResult<R>>;
}
