/*
 * lease.pml: nodeid's lease protocol for one node ID, model-checked by spin.
 * spec/README.md says what it models, what it leaves out, and how to run it;
 * docs/evidence/design.md sections 5-6 and 7.3 give the argument it checks.
 *
 * The world, in ticks of real time (S ticks = one second of the store's clock):
 *   - the lease object: a compare-and-swap register (ETags never repeat), with
 *     the record's holder, version and reservation, the writeId of the write
 *     that produced it, and Last-Modified in whole store seconds, stamped up to
 *     E ticks early; the store's clock is real time, read truncated to the
 *     second (Date);
 *   - writes on the wire: each lands at any later instant or never; its answer
 *     may be lost (an unknown outcome, resolved by reading the object back and
 *     comparing writeIds), and it may land after that read-back (late);
 *   - two tasks, whose wall clocks are OFF ticks apart, that create, take
 *     (free, or expired by the store's clock), renew, fence, release and
 *     crash; a task has one write on the wire (a lost write is one replaced
 *     by its next). Pauses need no step: any task may sit still while time
 *     runs;
 *   - the fence: t0 + L - M on the holder's monotonic clock, t0 the send time
 *     of its last landed write; a clock running slow within the rate bound
 *     makes it fall up to D ticks later in real time. The model takes the
 *     latest instant (a fence that falls sooner only stops a holder sooner);
 *   - suspensions: a holder's host may be suspended (a VM paused) while it
 *     has no write on the wire. It takes no step and its monotonic clock
 *     stands still, so its fence on that clock does not move; the second
 *     reading the fence is kept on (the real-time clock, which counts the
 *     suspension) runs ahead by the suspended ticks (lag), and the claim is
 *     valid only while both deadlines are ahead. Valid, at every tick the
 *     claim runs and as it resumes, folds the nearer real-time deadline into
 *     the monotonic one. The real-time clock may step back while the task
 *     runs, by no more than it ran ahead: the first Valid after a resume sees
 *     every suspended tick (the assumption of docs/evidence/design.md section 5);
 *   - jeopardy and recovery (the rule proposed in issue 19): a
 *     holder whose fence fell issues nothing and keeps renewing by CAS on its
 *     own last ETag; a CAS of its own that lands resumes the claim with the
 *     same version, fenced from that write's send time; a refusal, another
 *     writer's record or the end of its grace (any instant) is a final loss;
 *   - elections: one slot, the version is the term (election.Campaign is an
 *     Acquire on a one-ID cluster), so this model is the election's too.
 *
 * Time is kept relative to now, so there is no horizon: every clock reading a
 * guard compares is stored as an age or as (value - now), clamped where every
 * smaller or larger value decides every guard alike. Runs are bounded only by
 * VMAX (no take above that version).
 *
 * Invariants (assert):
 *   ONE   at most one task holds a valid claim at any instant;
 *   TS    timestamps are ordered by version: every one issued under a version
 *         is above every one issued under a lower version, so no (ID,
 *         timestamp) is issued twice across holders;
 *   VER   a landed write never lowers the version (terms never go back), and
 *         no version is granted to two claims (one leader a term).
 *
 * Mutations (-D NAME) break one rule each; spec/check.sh runs them and
 * requires spin to find a violation (spec/README.md lists them, and the two
 * that are not caught, and why).
 *
 * Restrictions (-D NAME) only take behaviours away, so a violation found with
 * them is one of the whole model; spec/check.sh runs each mutation in the
 * smallest world that still shows its violation, which is far cheaper:
 *   ANSWERED   every write that lands is answered: no unknown outcomes and
 *              no read-backs;
 *   NORELEASE  no task releases;
 *   NOCRASH    a claim ends only by a refusal (412): no crash, no final loss
 *              by the end of a grace;
 *   NOSUSPEND  no host is suspended (and no clock steps).
 */

/* ---- parameters ---- */
#ifndef VMAX
#define VMAX 3            /* no take above this version */
#endif
#define TASKS 2
#define S 3               /* ticks per second of the store's clock */
#define L 4               /* the lease (1.33 s): lease + CM is not whole seconds */
#define CM 1              /* ClockMargin */
#define E 1               /* Last-Modified stamped up to E <= CM ticks early */
#define D 3               /* the rate bound: a fence falls at most D ticks late */
#define OFF 2             /* task 0's wall clock is OFF ticks ahead; task 1's is right */

#ifdef NOSAFETY
#define M 0               /* bug: no safety margin: the fence at t0 + lease */
#else
#define M 3               /* SafetyMargin >= D */
#endif
#define FENCE (L - M + D) /* the latest real time after t0 at which the fence falls */

/* The expiry rule on one response: Date - Last-Modified > lease + 1 s + CM,
 * with age = Date - Last-Modified in whole seconds. */
#ifdef NORES
#define EXPIRED (age * S > L + CM)      /* bug: no resolution term */
#else
#define EXPIRED (age * S > L + S + CM)
#endif
#define AGEMAX 3          /* every age from here on is expired, with or without NORES */
#define PAST (-1)         /* every wall reading before now: below every timestamp to come */

/* ---- the store's clock and the lease object ---- */
byte phase;    /* now mod S: where in its second the store's clock is */
byte age;      /* Date - Last-Modified, whole seconds, at most AGEMAX */
bool exists;   /* the object has been created */
byte oHolder;  /* 0: free; t+1: held by task t */
byte oVer;     /* version: the fencing token, the election's term */
short oRes = PAST;  /* reservedUntilMs - now */
#ifdef WALLEXPIRY
short oExp = PAST;  /* expiresAt (the writer's wall clock + lease) - now */
#endif

/* ---- writes on the wire: one per task ----
 * An ETag never repeats and only its equality with the object's current one
 * matters, so each holder of one keeps a flag: is it still current? Every
 * landed write clears them all. Likewise a writeId: is the record in the
 * store the one this write produced? A write that is lost on the wire is a
 * write that is replaced by the next one its task sends (resend). */
mtype = { NONE, FLIGHT, LANDED, REFUSED };
typedef Write {
	mtype st = NONE;
	bool create;   /* If-None-Match: * (else If-Match on an ETag:) */
	bool cur;      /*   that ETag is the object's current one */
	byte holder;   /* the record written: holder, version, reservation - now */
	byte ver;
	short res = PAST;
	byte sent;     /* now - its send time, at most FENCE */
	bool inStore;  /* the object holds this write's record (its writeId) */
	bool prod;     /* landed, and the ETag it produced is still current */
	bool pend;     /* its sender lists it pending: outcome unknown */
#ifdef RACY
	bool prev;     /* its ETag was current one write ago */
#endif
#ifdef WALLEXPIRY
	short exp = PAST;
#endif
};
Write w[TASKS];

/* ---- tasks ---- */
mtype = { IDLE, TAKING, HOLD, RELEASING };
typedef Task {
	mtype st = IDLE;
	byte off;       /* wall clock - real time */
	bool planned;   /* a read found the object takeable: */
	bool rCreate;   /*   missing: create it */
	bool rCur;      /*   the ETag it read is still current */
	byte rVer;      /*   its version */
	short rRes = PAST;  /* its reservation: the floor of a take */
	bool wait;      /* the task awaits its write's answer */
	/* the claim */
	byte ver;
	bool cur;       /* the ETag of its last landed write is the current one */
	short floor = PAST;
	short res = PAST;   /* the reservation of its last landed write */
	byte fence;     /* ticks until Valid turns false; 0: fallen */
	short last = PAST;  /* the highest timestamp issued (the floor before any) */
	short relRes = PAST; /* the reservation a release writes */
#ifndef NOSUSPEND
	bool susp;      /* its host is suspended: no step, the monotonic clock stands still */
	byte lag;       /* ticks the real-time reading ran ahead of the monotonic one
	                 * since the send of the claim's last landed write, at most FENCE */
#endif
};
Task t[TASKS];

/* ---- invariant bookkeeping (timestamps - now) ---- */
byte topVer;           /* the highest version that issued a timestamp */
short topLo = PAST;    /* the lowest timestamp issued under topVer */
short topHi = PAST;    /* the highest timestamp issued under topVer */
short belowHi = PAST;  /* the highest timestamp issued under versions below topVer */
bool granted[VMAX + 1];

/* Scratch: written before it is read within one atomic step, so kept out of
 * the state vector. */
#ifdef NOHIDDEN
byte j;                   /* spin -DNOHIDDEN, for a breadth-first search (pan -DBFS) */
short ts, rv;
#else
hidden byte j;
hidden short ts, rv;
#endif

#ifdef NOSUSPEND
#define LAG(i) 0
#define running(i) true
#else
#define LAG(i) t[i].lag
#define running(i) (!t[i].susp)
#endif

/* A write that lands was sent after the last resume (a task suspends with no
 * write on the wire), so its deadlines start level. */
#ifdef NOSUSPEND
#define RESETLAG skip
#else
#define RESETLAG t[me].lag = 0
#endif

/* Valid: both deadlines ahead, the monotonic one (fence) and the one on the
 * real-time reading (fence - lag). */
#ifdef NOFENCE
#define valid(i) (t[i].st == HOLD)   /* bug: the fence never falls */
#else
#define valid(i) (t[i].st == HOLD && t[i].fence > LAG(i))
#endif

#define assertAlone assert(!valid(0) || !valid(1))  /* ONE (two tasks) */

#define DEC(x) if :: x > PAST -> x-- :: else -> skip fi
#define MAX(a, b) (a > b -> a : b)
#define MIN(a, b) (a < b -> a : b)

/* Issue the timestamp now + off when claim i may: above its last one and its
 * floor, at most its reservation. Issuing as soon and as often as it may is
 * the worst case for TS (issuing changes no write, and a release lowers the
 * reservation to what was issued), so every claim issues at every instant it
 * may: when it is granted or re-armed, and at every tick. */
#ifdef JEOPISSUE
#define mayIssue(i) (t[i].st == HOLD && running(i))  /* bug: issues in jeopardy too */
#else
#define mayIssue(i) (valid(i) && running(i))
#endif
inline issueBy(i) {
	if
	:: mayIssue(i) && t[i].off > t[i].last && t[i].off > t[i].floor && t[i].off <= t[i].res ->
		ts = t[i].off;
		if
		:: t[i].ver > topVer ->
			assert(ts > belowHi && ts > topHi);  /* TS */
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

/* observe: claim i checks Valid (it does at every tick it runs, and as it
 * resumes), which folds the real-time deadline into the monotonic one when
 * it is the nearer: fence - lag. */
inline observe(i) {
#if !defined(NOSUSPEND) && !defined(NOFOLD)
	if
	:: t[i].st == HOLD && t[i].lag > 0 ->
#ifdef LATCHONLY
		/* bug: a4de56f's rule: only a fallen real-time deadline is folded */
		if :: t[i].fence <= t[i].lag -> t[i].fence = 0 :: else -> skip fi
#else
		t[i].fence = (t[i].fence > t[i].lag -> t[i].fence - t[i].lag : 0); t[i].lag = 0
#endif
	:: else -> skip
	fi;
#endif
	skip
}

/* Real time advances by one tick; the store's clock with it. A suspended
 * task's monotonic clock stands still; its real-time reading does not. */
inline tickTask(i) {
	if
	:: running(i) -> if :: t[i].fence > 0 -> t[i].fence-- :: else -> skip fi; observe(i)
#ifndef NOSUSPEND
	:: else -> if :: t[i].st == HOLD && t[i].lag < FENCE -> t[i].lag++ :: else -> skip fi
#endif
	fi;
	DEC(t[i].rRes); DEC(t[i].floor); DEC(t[i].res); DEC(t[i].last); DEC(t[i].relRes);
	/* a send time matters only to a write its sender may still adopt */
	if :: (w[i].pend || t[i].wait) && w[i].sent < FENCE -> w[i].sent++ :: else -> skip fi;
	DEC(w[i].res);
#ifdef WALLEXPIRY
	DEC(w[i].exp);
#endif
	skip
}
active proctype clock() {
end:
	do
	:: d_step {
		phase++;
		if
		:: phase == S -> phase = 0; if :: exists && age < AGEMAX -> age++ :: else -> skip fi
		:: else -> skip
		fi;
		DEC(oRes);
#ifdef WALLEXPIRY
		DEC(oExp);
#endif
		DEC(topLo); DEC(topHi); DEC(belowHi);
		tickTask(0); tickTask(1);
		issueBy(0); issueBy(1);
		assertAlone
	}
#ifndef NOSUSPEND
	/* the real-time clock of a running task steps back, by no more than it
	 * ran ahead */
	:: d_step { t[0].lag > 0 && !t[0].susp -> t[0].lag--; assertAlone }
	:: d_step { t[1].lag > 0 && !t[1].susp -> t[1].lag--; assertAlone }
#endif
	od
}

/* clearWrite: forget a write off the wire that no one awaits any more. */
inline clearWrite(i) {
	w[i].st = NONE; w[i].create = false; w[i].cur = false; w[i].holder = 0; w[i].ver = 0;
	w[i].res = PAST; w[i].sent = 0; w[i].inStore = false; w[i].prod = false; w[i].pend = false;
#ifdef RACY
	w[i].prev = false;
#endif
#ifdef WALLEXPIRY
	w[i].exp = PAST;
#endif
	skip
}

/* doom: a write on the wire whose condition can no longer hold is refused
 * whenever it lands, and its sender cannot tell when: refuse it now. */
inline doom(i) {
	if
	:: w[i].st == FLIGHT && (w[i].create || !w[i].cur
#ifdef RACY
	                         && !w[i].prev
#endif
	                        ) ->
		w[i].st = REFUSED;
		if
		:: !w[i].pend && !t[i].wait -> clearWrite(i)
		:: else -> skip
		fi
	:: else -> skip
	fi
}

/* overwritten: the object changed: every ETag and writeId known is old. */
inline overwritten() {
#ifdef RACY
	w[0].prev = w[0].cur; w[1].prev = w[1].cur;
#endif
	w[0].cur = false; w[0].inStore = false; w[0].prod = false;
	w[1].cur = false; w[1].inStore = false; w[1].prod = false;
	t[0].cur = false; t[0].rCur = false; t[1].cur = false; t[1].rCur = false
}

/* A write lands: applied if its condition holds, refused (412) if not. A
 * landed write never lowers the version (VER). */
inline land(i) {
	if
#ifdef RACY
	/* bug: a store that lets a second racer win: a take whose ETag was
	 * current one write ago lands too, while the version is the same */
	:: (w[i].create && !exists) || (!w[i].create && w[i].cur) ||
	   (!w[i].create && w[i].prev && w[i].holder != 0 && w[i].ver == oVer) ->
#else
	:: (w[i].create && !exists) || (!w[i].create && w[i].cur) ->
#endif
		assert(w[i].ver >= oVer);  /* VER */
		overwritten();
		exists = true;
		oHolder = w[i].holder; oVer = w[i].ver; oRes = w[i].res;
#ifdef WALLEXPIRY
		oExp = w[i].exp;
#endif
		if
		:: age = 0
		:: phase < E -> age = 1  /* stamped early, in the second before */
		fi;
		w[i].inStore = true; w[i].prod = true;
		w[i].st = LANDED;
		doom(0); doom(1)
	:: else -> w[i].st = REFUSED
	fi;
	if
	:: !w[i].pend && !t[i].wait -> clearWrite(i)  /* no one asks any more */
	:: else -> skip
	fi
}

/* The network lands any write on the wire, at any instant (or never). */
active proctype net() {
end:
	do
	:: atomic { w[0].st == FLIGHT -> land(0) }
	:: atomic { w[1].st == FLIGHT -> land(1) }
	od
}

/* send: a new write from this task; one still on the wire, pending, is
 * replaced (as if lost: a lost write and its retry). */
inline send(sCreate, sCur, sHolder, sVer, sRes) {
	clearWrite(me);
	w[me].st = FLIGHT; w[me].create = sCreate; w[me].cur = sCur;
	w[me].holder = sHolder; w[me].ver = sVer; w[me].res = sRes;
#ifdef WALLEXPIRY
	w[me].exp = t[me].off + L;
#endif
	t[me].wait = true
}
/* the task may send: its write is off the wire or pending on it; a landed
 * pending write must be read back first */
#define maySend (!t[me].wait && (w[me].st == NONE || (w[me].st == FLIGHT && w[me].pend) || \
	(w[me].st == REFUSED && !w[me].pend)))

/* forget: the task lists its write pending no more (if it is on the wire it
 * may still land: a write of a crashed or finished claim). */
inline forget() {
	if
	:: w[me].st == FLIGHT -> w[me].pend = false
	:: else -> clearWrite(me)
	fi;
	t[me].wait = false
}

/* endClaim: the claim ends (lost, released, crashed): it issues nothing more. */
inline endClaim() {
	forget();
	t[me].st = IDLE; t[me].planned = false; t[me].rCreate = false; t[me].rCur = false;
	t[me].rVer = 0; t[me].rRes = PAST; t[me].ver = 0; t[me].cur = false;
	t[me].floor = PAST; t[me].res = PAST; t[me].fence = 0; t[me].last = PAST; t[me].relRes = PAST;
	RESETLAG
}

/* A take of ours landed: a new claim, fenced from the take's send time. */
inline claim() {
	assert(!granted[w[me].ver]);  /* VER: one claim a version, one leader a term */
	granted[w[me].ver] = true;
	t[me].st = HOLD;
	t[me].ver = w[me].ver;
	t[me].cur = w[me].prod;
#ifdef NOFLOOR
	t[me].floor = PAST;           /* bug: the successor ignores the floor */
#else
	t[me].floor = t[me].rRes;
#endif
	t[me].res = w[me].res;
	t[me].fence = FENCE - w[me].sent;
	RESETLAG;
	t[me].last = t[me].floor;
	t[me].rCreate = false; t[me].rCur = false; t[me].rVer = 0; t[me].rRes = PAST;
	forget();
	assertAlone;
	issueBy(me)
}

/* A renewal of ours landed (answered, or found by a read-back), sent sentAgo
 * ticks ago: the claim goes on, fenced from that send time, in jeopardy too
 * (the recovery rule). */
inline commit(sentAgo) {
#ifdef NOJEOPARDY
	if
	:: t[me].fence == 0 -> endClaim()  /* lossGrace 0: answered after the fence: lost */
	:: else ->
#endif
	t[me].cur = w[me].prod;
	t[me].res = w[me].res;
	t[me].fence = FENCE - sentAgo;
	RESETLAG;
	forget();
	assertAlone;
	issueBy(me)
#ifdef NOJEOPARDY
	fi
#endif
}

/* A read-back, after an unknown outcome or a 412 with a write pending: the
 * object carries our last ETag (nothing landed), our pending write (adopt it,
 * fenced from its send time), or another writer's record (lost). */
inline readBack() {
	if
	:: t[me].cur -> skip  /* not applied; the pending write may still land */
	:: !t[me].cur && w[me].pend && w[me].inStore && t[me].st == HOLD ->
#ifdef ADOPTREAD
		commit(0)            /* bug: fenced from the read-back, not the send */
#else
		commit(w[me].sent)
#endif
	:: !t[me].cur && w[me].pend && w[me].inStore && t[me].st == RELEASING && w[me].holder == 0 ->
		endClaim()           /* our release landed */
	:: !t[me].cur && w[me].pend && w[me].inStore && t[me].st == RELEASING && w[me].holder != 0 ->
		/* a renewal of ours landed: the release is written again on its ETag */
		t[me].cur = w[me].prod;
#ifdef RECOVERRELEASE
		/* bug: the claim resumes although its release began */
		t[me].st = HOLD; t[me].res = w[me].res; t[me].fence = FENCE - w[me].sent; RESETLAG;
		forget();
		assertAlone;
		issueBy(me)
#else
		forget()
#endif
	:: else ->
#ifdef RECOVERCHANGED
		if
		:: t[me].st == HOLD && t[me].fence == 0 ->
			forget(); t[me].cur = true  /* bug: in jeopardy, renew on another writer's ETag */
		:: else -> endClaim()
		fi
#else
		endClaim()           /* another writer: lost */
#endif
	fi
}

active [TASKS] proctype task() {
	byte me = _pid - 2;
	t[me].off = (me == 0 -> OFF : 0);
end:
	do
#ifndef NOSUSPEND
	/* ---- suspend (a holder with no write on the wire) and resume, which
	 * checks Valid at once ---- */
	:: atomic { running(me) && t[me].st == HOLD && w[me].st == NONE && !t[me].wait -> t[me].susp = true }
	:: atomic { t[me].susp -> t[me].susp = false; observe(me) }
#endif
	/* ---- acquire: read, then create or take by CAS ---- */
	:: atomic { running(me) && t[me].st == IDLE && !t[me].planned && !t[me].wait &&
	            (!exists || (oVer < VMAX && (oHolder == 0 ||
#ifdef WALLEXPIRY
	             t[me].off > oExp))) ->  /* bug: expiry on the taker's wall clock, by expiresAt */
#else
	             EXPIRED))) ->
#endif
		t[me].planned = true; t[me].rCreate = !exists; t[me].rCur = exists;
		t[me].rVer = oVer; t[me].rRes = (exists -> oRes : PAST)
	}
	:: atomic { running(me) && t[me].st == IDLE && t[me].planned && maySend ->
		rv = t[me].off + L; rv = MAX(t[me].rRes, rv);
		send(t[me].rCreate, t[me].rCur, me + 1, t[me].rVer + 1, rv);
		t[me].st = TAKING; t[me].planned = false
	}
	:: atomic { running(me) && t[me].st == TAKING && w[me].st == LANDED -> claim() }
	:: atomic { running(me) && t[me].st == TAKING && w[me].st == REFUSED -> endClaim() }
#ifndef ANSWERED
	:: atomic { running(me) && t[me].st == TAKING ->  /* no answer: read back, ours if it carries our writeId */
		if
		:: w[me].inStore -> claim()
		:: else -> endClaim()  /* if it lands after all, no one holds it: it expires */
		fi
	}
#endif

	/* ---- hold: renew by CAS on the last ETag (issuing is issueBy's) ---- */
	:: atomic { running(me) && t[me].st == HOLD && maySend ->
		rv = t[me].off + L; rv = MAX(t[me].res, rv); send(false, t[me].cur, me + 1, t[me].ver, rv)
	}
	:: atomic { running(me) && t[me].st == HOLD && t[me].wait && w[me].st == LANDED -> commit(w[me].sent) }
	:: atomic { running(me) && t[me].st == HOLD && t[me].wait && w[me].st == REFUSED ->
#ifdef RECOVERCHANGED
		if
		:: t[me].fence == 0 -> forget(); t[me].cur = true  /* bug: renew on another writer's ETag */
		:: else -> endClaim()
		fi
#else
		endClaim()                        /* 412: another writer: lost */
#endif
	}
#ifndef ANSWERED
	:: atomic { running(me) && t[me].st == HOLD && t[me].wait ->  /* no answer: pending */
		w[me].pend = true; t[me].wait = false
	}
	:: atomic { running(me) && t[me].st == HOLD && !t[me].wait && w[me].pend -> readBack() }
#endif

	/* ---- release: fence, then CAS free with the reservation lowered ---- */
#ifndef NORELEASE
	:: atomic { running(me) && t[me].st == HOLD && !t[me].wait ->
		t[me].st = RELEASING;             /* fenced: Valid is false from here on */
		t[me].fence = 0;
		t[me].relRes = MAX(t[me].floor, MIN(t[me].res, t[me].last))
	}
	:: atomic { running(me) && t[me].st == RELEASING && maySend ->
		rv = t[me].relRes; send(false, t[me].cur, 0, t[me].ver, rv)
	}
	:: atomic { running(me) && t[me].st == RELEASING && t[me].wait && w[me].st == LANDED -> endClaim() }
	:: atomic { running(me) && t[me].st == RELEASING && t[me].wait && w[me].st == REFUSED -> endClaim() }
#ifndef ANSWERED
	:: atomic { running(me) && t[me].st == RELEASING && t[me].wait -> w[me].pend = true; t[me].wait = false }
	:: atomic { running(me) && t[me].st == RELEASING && !t[me].wait && w[me].pend -> readBack() }
#endif
#endif

	/* ---- crash, or a final loss (jeopardy's grace over, a peer's higher
	 * version), or Close's context over: the claim ends; its write on the
	 * wire may still land ---- */
#ifndef NOCRASH
	:: atomic { running(me) && (t[me].st != IDLE || t[me].planned) -> endClaim() }
#endif
	od
}
