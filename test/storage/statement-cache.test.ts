import BetterSqlite3 from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { cachingStatements } from '../../storage/statement-cache.js';

describe('SQLite statement cache', () => {
  it('hands out the same prepared statement for the same SQL, and it runs again with new parameters', () => {
    const db = cachingStatements(new BetterSqlite3(':memory:'));
    db.prepare('create table t (a integer)').run([]);
    const insert = db.prepare('insert into t (a) values (?)');
    insert.run([1]);
    expect(db.prepare('insert into t (a) values (?)')).toBe(insert);
    db.prepare('insert into t (a) values (?)').run([2]);
    expect(db.prepare('select a from t order by a').all([])).toEqual([{ a: 1 }, { a: 2 }]);
    db.close();
  });

  it('keeps at most its capacity, dropping the least recently used', () => {
    const db = cachingStatements(new BetterSqlite3(':memory:'), 2);
    const one = db.prepare('select 1');
    const two = db.prepare('select 2');
    expect(db.prepare('select 1')).toBe(one); // now the most recent
    db.prepare('select 3'); // pushes out 'select 2'
    expect(db.prepare('select 1')).toBe(one);
    expect(db.prepare('select 2')).not.toBe(two);
    db.close();
  });

  it('a kept statement sees a schema changed after it was prepared', () => {
    const db = cachingStatements(new BetterSqlite3(':memory:'));
    db.prepare('create table t (a integer)').run([]);
    const select = db.prepare('select * from t');
    db.prepare('alter table t add column b text').run([]);
    db.prepare("insert into t (a, b) values (1, 'x')").run([]);
    expect(select.all([])).toEqual([{ a: 1, b: 'x' }]);
    db.close();
  });
});
