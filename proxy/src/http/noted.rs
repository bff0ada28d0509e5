//! A waker that notes it was woken before it wakes the task. A future
//! polled with it can then tell, at the next poll of the task, whether it
//! asked to be polled again, or the task was woken for something else: a
//! poll that nobody asked for can be skipped. The HTTP/2 client stream's
//! reads (`coalesce`) and the `h2` connection (`own::streams`) use it:
//! each poll of either costs thousands of instructions, and most of the
//! task's wakes are for the others.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Wake, Waker};

use futures_util::task::AtomicWaker;

/// Wakes noted for one future, and the task to pass them on to.
#[derive(Debug)]
pub struct Noted {
    shared: Arc<Shared>,
    /// `shared` as a waker: made once, so that what registers it sees the
    /// same waker every time.
    waker: Waker,
}

#[derive(Debug, Default)]
struct Shared {
    woken: AtomicBool,
    task: AtomicWaker,
}

impl Wake for Shared {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        // Noted before the task is woken: the poll it leads to must see it.
        self.woken.store(true, Ordering::Release);
        self.task.wake();
    }
}

impl Noted {
    /// Starts noted as woken when `woken`: a future not yet polled is due.
    pub fn new(woken: bool) -> Noted {
        let shared = Arc::new(Shared { woken: AtomicBool::new(woken), task: AtomicWaker::new() });
        let waker = Waker::from(shared.clone());
        Noted { shared, waker }
    }

    /// Whether the future is due a poll: woken since the last [`Noted::poll`]
    /// (or marked with [`Noted::mark`]). Registers `cx`'s task first, so a
    /// wake after the answer wakes it, and one before is in the answer.
    pub fn due(&self, cx: &Context<'_>) -> bool {
        self.shared.task.register(cx.waker());
        self.shared.woken.load(Ordering::Acquire)
    }

    /// Polls the future through `f` with this waker, clearing the note
    /// first: a wake during the poll is noted for the next one.
    pub fn poll<T>(&self, f: impl FnOnce(&mut Context<'_>) -> T) -> T {
        self.shared.woken.store(false, Ordering::Release);
        f(&mut Context::from_waker(&self.waker))
    }

    /// Marks the future due, as a wake would, without waking the task: for
    /// a future that must be polled again at the task's next pass (one
    /// that answered ready, or was told something outside a poll).
    pub fn mark(&self) {
        self.shared.woken.store(true, Ordering::Release);
    }

    /// Wakes as the future would (tests).
    #[cfg(test)]
    pub fn wake(&self) {
        self.waker.wake_by_ref();
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    /// A task's waker that counts its wakes (the stream wrapper's tests
    /// use it too).
    #[derive(Default)]
    pub(crate) struct Counted(pub AtomicUsize);

    impl Wake for Counted {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn due_after_a_wake_or_a_mark_until_the_next_poll() {
        let task = Arc::new(Counted::default());
        let waker = Waker::from(task.clone());
        let cx = Context::from_waker(&waker);
        let noted = Noted::new(true);
        assert!(noted.due(&cx));
        // Polled with the noted waker, which the future keeps.
        let kept = noted.poll(|cx| cx.waker().clone());
        assert!(!noted.due(&cx));
        kept.wake_by_ref();
        assert!(noted.due(&cx));
        assert_eq!(task.0.load(Ordering::SeqCst), 1);
        noted.poll(|_| ());
        assert!(!noted.due(&cx));
        // A mark makes it due without waking the task.
        noted.mark();
        assert!(noted.due(&cx));
        assert_eq!(task.0.load(Ordering::SeqCst), 1);
        // A wake during the poll is noted for the next one.
        noted.poll(|cx| cx.waker().wake_by_ref());
        assert!(noted.due(&cx));
        assert!(!Noted::new(false).due(&cx));
    }

    #[test]
    fn a_wake_goes_to_the_task_that_asked_last() {
        let (first, second) = (Arc::new(Counted::default()), Arc::new(Counted::default()));
        let noted = Noted::new(false);
        let (w1, w2) = (Waker::from(first.clone()), Waker::from(second.clone()));
        assert!(!noted.due(&Context::from_waker(&w1)));
        assert!(!noted.due(&Context::from_waker(&w2)));
        noted.wake();
        assert_eq!((first.0.load(Ordering::SeqCst), second.0.load(Ordering::SeqCst)), (0, 1));
    }
}
