-- 0003_memory: long-term memory, an inverted index per app and user over
-- the events of the sessions added to memory (IndexSession). The terms
-- of an event are store.MemoryTerms of store.MemoryText, computed by the
-- store, as in the bbolt store, so that both stores find the same facts.

-- The sessions in memory. indexed counts the session's events with
-- postings: their sum over a user's sessions is N of the idf. It is kept
-- here, not in a row per user, so that an append updates only a row of
-- its own session, whose lock it holds already.
CREATE TABLE memory_sessions (
    app_name   text COLLATE "C" NOT NULL,
    user_id    text COLLATE "C" NOT NULL,
    session_id text COLLATE "C" NOT NULL,
    indexed    bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (app_name, user_id, session_id),
    FOREIGN KEY (app_name, user_id, session_id) REFERENCES sessions ON DELETE CASCADE
);

-- One row per term of an indexed event: tf is the term's count in it,
-- event_nanos the event's timestamp in Unix nanoseconds (ties rank newer
-- first). The primary key serves the cascade of DeleteSession; a search
-- reads memory_postings_by_term.
CREATE TABLE memory_postings (
    app_name    text COLLATE "C" NOT NULL,
    user_id     text COLLATE "C" NOT NULL,
    session_id  text COLLATE "C" NOT NULL,
    sequence    bigint NOT NULL,
    term        text COLLATE "C" NOT NULL,
    tf          integer NOT NULL,
    event_nanos bigint NOT NULL,
    PRIMARY KEY (app_name, user_id, session_id, sequence, term),
    FOREIGN KEY (app_name, user_id, session_id) REFERENCES memory_sessions ON DELETE CASCADE
);

-- A search reads a term's newest postings first, at most
-- MaxPostingsPerTerm of them: session and sequence complete the order,
-- so that the same postings are read on every page even when events
-- share a time. INCLUDE makes it an index-only scan, no heap page per
-- posting.
CREATE INDEX memory_postings_by_term ON memory_postings (app_name, user_id, term, event_nanos DESC, session_id, sequence)
    INCLUDE (tf);
