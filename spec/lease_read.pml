/*
 * lease_read.pml: the read mode of nodeid's lease protocol (keep-alive by
 * reads), for one node ID, model-checked by spin. docs/evidence/design.md, "Keep-alive
 * by reads", gives the rule and the argument; spec/README.md says how to run
 * it.
 *
 * A model apart from lease.pml: the holder's fence is armed by reads for W,
 * capped by its last write + B; records carry B; a take needs a challenge and
 * a confirm that stood W; records carry a kind (plain, challenge, confirm).
 * lease.pml keeps the write mode's state count and mutations unchanged.
 *
 * The world, in ticks of real time (the store's clock is real time, read to
 * the tick here: the whole-second truncation and its "+1 s" term are
 * lease.pml's, NORES):
 *   - the lease object: a compare-and-swap register (ETags never repeat) with
 *     the record's kind, holder, version and reservation; Last-Modified is
 *     anywhere between the write's send (up to E ticks before it) and its
 *     landing: S3 does not say when within a PUT it is stamped;
 *   - writes on the wire land at any later instant or never; a landed write's
 *     answer comes at any later instant (unknown outcomes and read-backs are
 *     lease.pml's);
 *   - two tasks that take (free, expired by the backstop B on the store's
 *     clock, or a confirmed challenge that stood W), hold, read, answer,
 *     renew (the backstop write), release and crash;
 *   - a challenger that writes a challenge by CAS on a held plain record,
 *     copying it, or on a challenge that was never confirmed, copying it and
 *     naming the write it named (nodeid challenges a stale challenge again:
 *     here at any instant, which covers "at its own next round" and "once it
 *     stood W"), and after its 2xx a confirm by CAS on the challenge's ETag,
 *     and may give up at any instant (its write may still land). Any task may
 *     take a confirmed challenge, so a third party that only challenges is as
 *     general as a challenger that later takes, and it lets a stale holder see
 *     a challenge on a successor's record (-D OTHERWID);
 *   - a holder's read: sent at any instant, served (it sees the object) at any
 *     later instant, its answer acted on at any later instant (late answers,
 *     SDK retries: a retry is served later and still credited to the first
 *     send). A pause is free, so a read in flight across a suspension is a
 *     read answered late. The fence is the real time at which it falls at the
 *     latest (the fold of the real-time reading into the monotonic one, which
 *     makes a suspension count, is lease.pml's, NOFOLD and LATCHONLY);
 *   - the fence: armed by a landed write for W from its send; re-armed by a
 *     read that shows the holder's own ETag to its send + W; never beyond the
 *     cap, the last landed write's send + B. With M = D, W and B here are the
 *     real-time bounds W - M + D and B - M_B + D_B;
 *   - timestamps: a claim issues its wall clock above its floor and its last,
 *     at most its reservation (wall + B at each write), at every instant it
 *     may; task 0's wall clock is OFF ahead.
 *
 * Invariants (assert): ONE at most one valid claim at any instant (not
 * asserted with -D FENCEFAIL); TS timestamps ordered by version (so no (ID,
 * timestamp) twice); VER a landed write never lowers the version, no version
 * granted twice.
 *
 * Worlds:
 *   FENCEFAIL  the fence argument failed: a claim never stops issuing (a
 *              clock far beyond the rate bound); ONE is not asserted, TS is:
 *              the floor alone keeps IDs unique.
 *   NOCHAL     no challenger: takes by the backstop only;
 *   NORELEASE  no task releases;  NOCRASH  no task crashes or gives up.
 * The restrictions only take behaviours away, so a violation found with them
 * is one of the whole model.
 * Mutations (each must be caught; spec/check.sh runs them):
 *   CHALWIN    the window runs from the challenge: a challenge whose own
 *              Last-Modified stood W is taken, no confirm needed;
 *   ANSWERTIME a read re-arms the fence from its answer's arrival, not its send;
 *   REARMB     a read re-arms the fence for B (up to the cap), not W;
 *   OTHERWID   the holder answers a challenge that names another writeId;
 *   READRES    a read raises the reservation to the read's wall + B
 *              (caught in FENCEFAIL);
 *   EARLYTAKE  a confirmed challenge taken one margin early: Date - LM >= W.
 */

#ifndef VMAX
#define VMAX 2
#endif
#define TASKS 2
#define CH 2              /* the challenger's write slot */
#define W 2               /* the window */
#define B 5               /* the backstop lease: records say leaseMillis = B */
#define CM 1              /* ClockMargin */
#define E 1               /* Last-Modified up to E <= CM ticks before the send */
#define OFF 1             /* task 0's wall clock is OFF ticks ahead */
#define AGEMAX (B + CM + 1)   /* every age from here on decides every guard alike */
#define PAST (-1)
#ifdef REARMB
#define RDMAX B
#else
#define RDMAX W           /* a read sent W ago re-arms nothing */
#endif

#define EXPIRED (lmAge > B + CM)         /* the backstop: the ordinary rule on leaseMillis = B */
#ifdef EARLYTAKE
#define STOOD (lmAge >= W)               /* bug: the take one margin early */
#else
#define STOOD (lmAge > W + CM)           /* a confirm that stood its window */
#endif

mtype = { REC, CHAL, CONF };             /* record kinds */
mtype = { NONE, FLIGHT, LANDED, REFUSED };
mtype = { IDLE, TAKING, HOLD, RELEASING };
mtype = { RNONE, RFLIGHT, ROWN, RNAMED, ROTHER };  /* a read: sent, then what it saw */

/* ---- the object ---- */
mtype oKind = REC;
byte oHolder;        /* 0 free; t+1 task t */
byte oVer;
short oRes = PAST;   /* reservation - now */
byte lmAge = AGEMAX; /* now - Last-Modified, ticks */
bool nm[TASKS];      /* the object is a challenge or confirm naming task t's last landed write */

typedef Write {
	mtype st = NONE;
	bool cur;        /* the ETag it is conditioned on is current */
	mtype kind = REC;
	byte holder;
	byte ver;
	short res = PAST;
	byte sent;       /* now - send, at most AGEMAX */
	bool prod;       /* landed, and the ETag it produced is current */
	bool wait;       /* its sender awaits the answer */
};
Write w[TASKS + 1];

typedef Task {
	mtype st = IDLE;
	byte off;
	bool planned; bool rCur; byte rVer; short rRes = PAST;  /* a take's read */
	byte ver;
	bool cur;        /* the ETag of its last landed write is current */
	short floor = PAST;
	short res = PAST;
	short last = PAST;
	short relRes = PAST;
	byte fence;      /* ticks until the fence falls (real time, latest) */
	byte cap;        /* ticks until last landed write's send + B */
	mtype rd = RNONE;
	byte rdSent;     /* now - the read's send, at most B */
	bool rdCur;      /* the challenge it saw is still current */
};
Task t[TASKS];

/* the challenger; cOver: its challenge is planned over a challenge, chOver:
   the one on the wire (w[CH]) is */
bool cPlanned; bool cCur; byte cHolder; byte cVer; short cRes = PAST;
bool cOver; bool chOver;

/* invariant bookkeeping (as lease.pml) */
byte topVer;
short topLo = PAST;
short topHi = PAST;
short belowHi = PAST;
bool granted[VMAX + 1];
hidden short ts, rv;

#define DEC(x) if :: x > PAST -> x-- :: else -> skip fi
#define MAX(a, b) (a > b -> a : b)
#define MIN(a, b) (a < b -> a : b)

#ifdef FENCEFAIL
#define valid(i) (t[i].st == HOLD)
#define assertAlone skip
#else
#define valid(i) (t[i].st == HOLD && t[i].fence > 0)
#define assertAlone assert(!valid(0) || !valid(1))   /* ONE */
#endif

inline issueBy(i) {
	if
	:: valid(i) && t[i].off > t[i].last && t[i].off > t[i].floor && t[i].off <= t[i].res ->
		ts = t[i].off;
		if
		:: t[i].ver > topVer ->
			assert(ts > belowHi && ts > topHi);   /* TS */
			belowHi = MAX(belowHi, topHi);
			topVer = t[i].ver; topLo = ts; topHi = ts
		:: t[i].ver == topVer ->
			assert(ts > belowHi);                 /* TS */
			topHi = ts
		:: t[i].ver < topVer ->
			assert(ts < topLo)                    /* TS */
		fi;
		t[i].last = ts
	:: else -> skip
	fi
}

inline tickTask(i) {
	if :: t[i].fence > 0 -> t[i].fence-- :: else -> skip fi;
	if :: t[i].cap > 0 -> t[i].cap-- :: else -> skip fi;
	if :: t[i].rd != RNONE && t[i].rdSent < RDMAX -> t[i].rdSent++ :: else -> skip fi;
	DEC(t[i].rRes); DEC(t[i].floor); DEC(t[i].res); DEC(t[i].last); DEC(t[i].relRes)
}
inline tickWrite(i) {
	if :: (w[i].st == FLIGHT || w[i].wait) && w[i].sent < AGEMAX -> w[i].sent++ :: else -> skip fi;
	DEC(w[i].res)
}

active proctype clock() {
end:
	do
	:: d_step {
		if :: lmAge < AGEMAX -> lmAge++ :: else -> skip fi;
		DEC(oRes); DEC(cRes);
		DEC(topLo); DEC(topHi); DEC(belowHi);
		tickTask(0); tickTask(1);
		tickWrite(0); tickWrite(1); tickWrite(2);
		issueBy(0); issueBy(1);
		assertAlone
	}
	od
}

inline clearWrite(i) {
	w[i].st = NONE; w[i].cur = false; w[i].kind = REC; w[i].holder = 0; w[i].ver = 0;
	w[i].res = PAST; w[i].sent = 0; w[i].prod = false; w[i].wait = false
}

/* the object changed: every ETag known is old */
inline overwritten() {
	w[0].cur = false; w[0].prod = false; w[1].cur = false; w[1].prod = false;
	w[2].cur = false; w[2].prod = false;
	t[0].cur = false; t[0].rCur = false; t[0].rdCur = false;
	t[1].cur = false; t[1].rCur = false; t[1].rdCur = false;
	cCur = false
}

inline doom(i) {
	if
	:: w[i].st == FLIGHT && !w[i].cur ->
		w[i].st = REFUSED;
		if :: !w[i].wait -> clearWrite(i) :: else -> skip fi
	:: else -> skip
	fi
}

inline land(i) {
	if
	:: w[i].cur ->
		assert(w[i].ver >= oVer);   /* VER */
		if
		:: w[i].kind == CHAL && i == CH && chOver -> skip  /* it names what the challenge named */
		:: w[i].kind == CHAL && !(i == CH && chOver) ->  /* it names the writeId of the record it replaces */
			nm[0] = t[0].cur || w[0].prod; nm[1] = t[1].cur || w[1].prod
		:: w[i].kind == CONF -> skip  /* it names what the challenge named */
		:: else -> nm[0] = false; nm[1] = false
		fi;
		overwritten();
		oKind = w[i].kind; oHolder = w[i].holder; oVer = w[i].ver; oRes = w[i].res;
		/* Last-Modified anywhere from E before the send to the landing */
		lmAge = 0;
		do
		:: lmAge < w[i].sent + E && lmAge < AGEMAX -> lmAge++
		:: break
		od;
		w[i].prod = true; w[i].st = LANDED;
		doom(0); doom(1); doom(2)
	:: else -> w[i].st = REFUSED
	fi;
	if :: !w[i].wait -> clearWrite(i) :: else -> skip fi
}

active proctype net() {
end:
	do
	:: atomic { w[0].st == FLIGHT -> land(0) }
	:: atomic { w[1].st == FLIGHT -> land(1) }
	:: atomic { w[2].st == FLIGHT -> land(2) }
	od
}

/* the challenger: challenge a held plain record, confirm after the 2xx */
#ifdef NOCHAL
#define FIRSTTASK 2
#else
#define FIRSTTASK 3
active proctype challenger() {
end:
	do
	:: atomic { !cPlanned && w[CH].st == NONE && oHolder != 0 && (oKind == REC || oKind == CHAL) ->
		cPlanned = true; cCur = true; cHolder = oHolder; cVer = oVer; cRes = oRes; cOver = (oKind == CHAL) }
	:: atomic { cPlanned ->
		clearWrite(CH); w[CH].st = FLIGHT; w[CH].cur = cCur; w[CH].kind = CHAL;
		w[CH].holder = cHolder; w[CH].ver = cVer; w[CH].res = cRes; w[CH].wait = true; chOver = cOver;
		cPlanned = false; cCur = false; cHolder = 0; cVer = 0; cRes = PAST; cOver = false }
	:: atomic { w[CH].wait && w[CH].st == LANDED && w[CH].kind == CHAL ->  /* 2xx: confirm */
		/* holder, version, reservation copied unchanged */
		w[CH].cur = w[CH].prod; w[CH].st = FLIGHT; w[CH].kind = CONF; w[CH].sent = 0;
		w[CH].prod = false }
	:: atomic { w[CH].wait && (w[CH].st == REFUSED || w[CH].st == LANDED && w[CH].kind == CONF) ->
		clearWrite(CH) }
	:: atomic { (cPlanned || w[CH].wait) ->  /* gives up; its write may still land */
		cPlanned = false; cCur = false; cHolder = 0; cVer = 0; cRes = PAST; cOver = false;
		if :: w[CH].st == FLIGHT -> w[CH].wait = false :: else -> clearWrite(CH) fi }
	od
}
#endif

inline send(sCur, sHolder, sVer, sRes) {
	clearWrite(me);
	w[me].st = FLIGHT; w[me].cur = sCur; w[me].kind = REC;
	w[me].holder = sHolder; w[me].ver = sVer; w[me].res = sRes; w[me].wait = true
}
#define maySend (!w[me].wait && w[me].st == NONE)

inline forget() {
	if :: w[me].st == FLIGHT -> w[me].wait = false :: else -> clearWrite(me) fi
}

inline endClaim() {
	forget();
	t[me].st = IDLE; t[me].planned = false; t[me].rCur = false; t[me].rVer = 0; t[me].rRes = PAST;
	t[me].ver = 0; t[me].cur = false; t[me].floor = PAST; t[me].res = PAST; t[me].last = PAST;
	t[me].relRes = PAST; t[me].fence = 0; t[me].cap = 0;
	t[me].rd = RNONE; t[me].rdSent = 0; t[me].rdCur = false
}

/* a landed write of ours arms the fence for W from its send, the cap for B */
inline armWrite() {
	t[me].cap = (w[me].sent < B -> B - w[me].sent : 0);
	rv = (w[me].sent < W -> W - w[me].sent : 0);
	t[me].fence = MAX(t[me].fence, rv);
	t[me].fence = MIN(t[me].fence, t[me].cap)
}

active [TASKS] proctype task() {
	byte me = _pid - FIRSTTASK;
	t[me].off = (me == 0 -> OFF : 0);
end:
	do
	/* ---- take: free, expired by the backstop, or a confirm that stood W ---- */
	:: atomic { t[me].st == IDLE && !t[me].planned && maySend && oVer < VMAX &&
	            (oHolder == 0 && oKind == REC || oHolder != 0 && EXPIRED ||
	             oKind == CONF && STOOD
#ifdef CHALWIN
	             || oKind == CHAL && STOOD   /* bug: the window from the challenge */
#endif
	            ) ->
		t[me].planned = true; t[me].rCur = true; t[me].rVer = oVer; t[me].rRes = oRes }
	:: atomic { t[me].st == IDLE && t[me].planned && maySend ->
		rv = t[me].off + B; rv = MAX(t[me].rRes, rv);
		send(t[me].rCur, me + 1, t[me].rVer + 1, rv);
		t[me].st = TAKING; t[me].planned = false }
	:: atomic { t[me].st == TAKING && w[me].st == LANDED ->
		assert(!granted[w[me].ver]);   /* VER */
		granted[w[me].ver] = true;
		t[me].st = HOLD; t[me].ver = w[me].ver; t[me].cur = w[me].prod;
		t[me].floor = t[me].rRes; t[me].last = t[me].rRes; t[me].res = w[me].res;
		t[me].rCur = false; t[me].rVer = 0; t[me].rRes = PAST;
		armWrite(); forget();
		assertAlone; issueBy(me) }
	:: atomic { t[me].st == TAKING && w[me].st == REFUSED -> endClaim() }

	/* ---- hold: read, and act on what the read saw ---- */
	:: atomic { t[me].st == HOLD && t[me].rd == RNONE -> t[me].rd = RFLIGHT; t[me].rdSent = 0 }
	:: atomic { t[me].rd == RFLIGHT ->   /* served: it sees the object now */
		if
		:: t[me].cur || w[me].prod -> t[me].rd = ROWN
		:: else ->
			if
#ifdef OTHERWID
			:: oKind != REC ->           /* bug: any challenge is answered */
#else
			:: oKind != REC && nm[me] ->
#endif
				t[me].rd = RNAMED; t[me].rdCur = true
			:: else -> t[me].rd = ROTHER
			fi
		fi }
	:: atomic { t[me].st == HOLD && t[me].rd == ROWN ->
#if defined(ANSWERTIME)
		rv = W;                           /* bug: from the answer's arrival */
#elif defined(REARMB)
		rv = B - t[me].rdSent;            /* bug: for B */
#else
		rv = (t[me].rdSent < W -> W - t[me].rdSent : 0);
#endif
		rv = MIN(rv, t[me].cap);
		t[me].fence = MAX(t[me].fence, rv);
#ifdef READRES
		rv = t[me].off - t[me].rdSent + B; t[me].res = MAX(t[me].res, rv);  /* bug */
#endif
		t[me].rd = RNONE; t[me].rdSent = 0;
		assertAlone; issueBy(me) }
	:: atomic { t[me].st == HOLD && t[me].rd == RNAMED && maySend ->  /* answer on its ETag */
		if
		:: t[me].rdCur ->
			rv = t[me].off + B; rv = MAX(t[me].res, rv);
			send(true, me + 1, t[me].ver, rv)
		:: else -> skip                   /* changed since: read again */
		fi;
		t[me].rd = RNONE; t[me].rdSent = 0; t[me].rdCur = false }
	:: atomic { t[me].st == HOLD && t[me].rd == ROTHER -> endClaim() }   /* another writer: lost */

	/* ---- the backstop write (a plain renewal) ---- */
	:: atomic { t[me].st == HOLD && maySend ->
		rv = t[me].off + B; rv = MAX(t[me].res, rv); send(t[me].cur, me + 1, t[me].ver, rv) }
	:: atomic { t[me].st == HOLD && w[me].wait && w[me].st == LANDED ->
		t[me].cur = w[me].prod; t[me].res = w[me].res; armWrite(); forget();
		assertAlone; issueBy(me) }
	:: atomic { t[me].st == HOLD && w[me].wait && w[me].st == REFUSED -> forget() }  /* 412: a read decides */

	/* ---- release: fence, then CAS free; a 412 on a challenge naming us is released on its ETag ---- */
#ifndef NORELEASE
	:: atomic { t[me].st == HOLD && !w[me].wait ->
		t[me].st = RELEASING; t[me].fence = 0;
		t[me].relRes = MAX(t[me].floor, MIN(t[me].res, t[me].last)) }
	:: atomic { t[me].st == RELEASING && maySend -> send(t[me].cur, 0, t[me].ver, t[me].relRes) }
	:: atomic { t[me].st == RELEASING && w[me].wait && w[me].st == LANDED -> endClaim() }
	:: atomic { t[me].st == RELEASING && w[me].wait && w[me].st == REFUSED ->
		if
		:: oKind != REC && nm[me] -> forget(); send(true, 0, t[me].ver, t[me].relRes)
		:: else -> endClaim()
		fi }
#endif

	/* ---- crash, or a final loss: its write may still land ---- */
#ifndef NOCRASH
	:: atomic { (t[me].st != IDLE || t[me].planned) -> endClaim() }
#endif
	od
}
