-- A session database written by contextchef before lineage tokens (main at 48e23bc):
-- sessions 'plain' (SQLiteSessionStore(path)) and 'signed' (keys=SnapshotKeys({'k': b'k' * 32})),
-- each two SessionSync turns (user 'oldN', assistant 'ok oldN'): version 2, one logged turn.
BEGIN TRANSACTION;
CREATE TABLE heads (
    id TEXT PRIMARY KEY,
    head TEXT NOT NULL
);
INSERT INTO "heads" VALUES('signed','{"format":"contextchef.store-head","version":2,"turns":1,"chain":"36dee660e50b393382bdb9b76a206f13a8e1bc06e0bcd54474e8884af2d5a9ff","signature":{"algorithm":"HMAC-SHA256","key_id":"k","session_id":"signed","mac":"e8ff1735e05ed3df22ae64d76fd83073d9aef7a586fe2b5df63023955e637f21"}}');
CREATE TABLE sessions (
    id TEXT PRIMARY KEY,
    version INTEGER NOT NULL,
    base TEXT NOT NULL,
    turns INTEGER NOT NULL,
    expires_at REAL
);
INSERT INTO "sessions" VALUES('plain',2,'{"format":"contextchef.snapshot","version":4,"system":"","history":[{"role":"user","parts":[{"kind":"text","text":"old0"}]},{"role":"assistant","parts":[{"kind":"text","text":"ok old0"}]}],"exposure":{"default_defer":false,"defer":[],"pin":[]},"mode":null,"whitelist":null,"blocked":[],"loaded_tools":[],"loaded_toolkits":[],"loaded_skills":[],"strategy":"client","target":null,"model":null,"announcements":[],"dynamic_state":null,"anchor":"Above is the current system state, not part of the user''s message.","new_context_pending":false,"ledgers":{},"compiled":null,"tools":{"fingerprint":"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855","names":[],"runtime":[],"definitions":[]},"skills":[]}',1,NULL);
INSERT INTO "sessions" VALUES('signed',2,'{"format":"contextchef.snapshot","version":4,"system":"","history":[{"role":"user","parts":[{"kind":"text","text":"old0"}]},{"role":"assistant","parts":[{"kind":"text","text":"ok old0"}]}],"exposure":{"default_defer":false,"defer":[],"pin":[]},"mode":null,"whitelist":null,"blocked":[],"loaded_tools":[],"loaded_toolkits":[],"loaded_skills":[],"strategy":"client","target":null,"model":null,"announcements":[],"dynamic_state":null,"anchor":"Above is the current system state, not part of the user''s message.","new_context_pending":false,"ledgers":{},"compiled":null,"tools":{"fingerprint":"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855","names":[],"runtime":[],"definitions":[]},"skills":[],"signature":{"algorithm":"HMAC-SHA256","key_id":"k","session_id":"signed","mac":"ea8b23e35353d7d7bd8fb6ce65f25bab421f42603b92b52fe7f4407bd76fab09"}}',1,NULL);
CREATE TABLE turns (
    id TEXT NOT NULL,
    version INTEGER NOT NULL,
    delta TEXT NOT NULL,
    PRIMARY KEY (id, version)
) WITHOUT ROWID;
INSERT INTO "turns" VALUES('plain',2,'[["extend",["history"],[{"role":"user","parts":[{"kind":"text","text":"old1"}]},{"role":"assistant","parts":[{"kind":"text","text":"ok old1"}]}]]]');
INSERT INTO "turns" VALUES('signed',2,'[["extend",["history"],[{"role":"user","parts":[{"kind":"text","text":"old1"}]},{"role":"assistant","parts":[{"kind":"text","text":"ok old1"}]}]],["set",["signature","mac"],"15acc2b3d21755b401f83489f3fa76f7a282d016cedcb73b48e51ffdb0877ce7"]]');
COMMIT;
