/**
 * A fixture made by the first test that asks for it, then shared by the others: each test asks
 * for what it needs instead of reading what an earlier test left, so it passes run alone (`-t`)
 * as it does in its whole file. A fixture that failed fails every test that asks for it.
 */
export function shared<T>(make: () => Promise<T>): () => Promise<T> {
  let made: Promise<T> | undefined;
  return () => {
    made ??= make();
    return made;
  };
}
