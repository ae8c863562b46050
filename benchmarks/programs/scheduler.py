"""Object-oriented: a Richards-style task scheduler (tasks, packets, queues, inheritance,
properties and dunder methods)."""

N = 80000  # packets


class Packet:
    __slots__ = ("kind", "data", "link")

    def __init__(self, kind, data, link=None):
        self.kind = kind
        self.data = data
        self.link = link

    def __repr__(self):
        return f"Packet({self.kind}, {self.data})"


class Queue:
    def __init__(self):
        self.head = None
        self.tail = None
        self.size = 0

    def push(self, packet):
        packet.link = None
        if self.tail is None:
            self.head = self.tail = packet
        else:
            self.tail.link = packet
            self.tail = packet
        self.size += 1

    def pop(self):
        packet = self.head
        if packet is not None:
            self.head = packet.link
            if self.head is None:
                self.tail = None
            self.size -= 1
        return packet

    def __len__(self):
        return self.size

    def __bool__(self):
        return self.size > 0


class Task:
    def __init__(self, name, priority, scheduler):
        self.name = name
        self.priority = priority
        self.scheduler = scheduler
        self.inbox = Queue()
        self.handled = 0

    @property
    def ready(self):
        return bool(self.inbox)

    def __lt__(self, other):
        return self.priority < other.priority

    def run(self):
        packet = self.inbox.pop()
        self.handled += 1
        self.handle(packet)

    def handle(self, packet):
        raise NotImplementedError

    def send(self, name, packet):
        self.scheduler.deliver(name, packet)


class Source(Task):
    def __init__(self, name, priority, scheduler, count):
        super().__init__(name, priority, scheduler)
        self.count = count

    def handle(self, packet):
        if self.count > 0:
            self.count -= 1
            kind = "work" if self.count % 3 else "io"
            self.send("worker" if kind == "work" else "device", Packet(kind, self.count))
            self.inbox.push(packet)


class Worker(Task):
    def __init__(self, name, priority, scheduler):
        super().__init__(name, priority, scheduler)
        self.checksum = 0

    def handle(self, packet):
        data = packet.data
        for i in range(4):
            data = (data * 31 + i) % 65521
        self.checksum = (self.checksum + data) % 65521
        packet.data = data
        self.send("sink", packet)


class Device(Task):
    def __init__(self, name, priority, scheduler):
        super().__init__(name, priority, scheduler)
        self.pending = []

    def handle(self, packet):
        self.pending.append(packet)
        if len(self.pending) >= 3:
            for p in sorted(self.pending, key=lambda p: p.data):
                self.send("sink", p)
            self.pending.clear()


class Sink(Task):
    def __init__(self, name, priority, scheduler):
        super().__init__(name, priority, scheduler)
        self.total = 0

    def handle(self, packet):
        self.total += packet.data if packet.kind == "work" else 1


class Scheduler:
    def __init__(self):
        self.tasks = {}
        self.steps = 0

    def add(self, task):
        self.tasks[task.name] = task
        return task

    def deliver(self, name, packet):
        self.tasks[name].inbox.push(packet)

    def run(self):
        order = sorted(self.tasks.values(), reverse=True)
        while True:
            for task in order:
                if task.ready:
                    task.run()
                    self.steps += 1
                    break
            else:
                return self.steps


def main(n=N):
    scheduler = Scheduler()
    source = scheduler.add(Source("source", 1, scheduler, n))
    worker = scheduler.add(Worker("worker", 3, scheduler))
    device = scheduler.add(Device("device", 2, scheduler))
    sink = scheduler.add(Sink("sink", 4, scheduler))
    source.inbox.push(Packet("start", 0))
    steps = scheduler.run()
    return steps, worker.checksum, len(device.pending), sink.total, worker.handled
