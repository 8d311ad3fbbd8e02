public class Work {
    static class Inner { static long hash(long x) { return x * 31 + (x >>> 7); } }
    static long a(int n) { long s = 0; for (int i = 0; i < n; i++) s += b(i); return s; }
    static long b(int i) { return Inner.hash(i) ^ c(i); }
    static long c(int i) { return (i % 3 == 0) ? Inner.hash(i + 1) : i; }
    static class Traced {
        static long fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
        static long fib(long n) { return n < 2 ? n : fib((int) n - 1); }
        static long run(int rounds) { long s = 0; for (int i = 0; i < rounds; i++) s += fib(7) + fib(3L); return s; }
    }
    public static void main(String[] args) throws Exception {
        long end = System.nanoTime() + Long.parseLong(args[0]) * 1_000_000L;
        long[] out = new long[2];
        Thread other = new Thread(() -> {
            long u = Traced.run(5);
            while (System.nanoTime() < end) u += a(1000);
            out[1] = u;
        }, "worker-2");
        other.start();
        long t = Traced.run(10);
        while (System.nanoTime() < end) t += a(2000);
        other.join();
        t += Traced.run(3);
        System.out.println(t + out[1]);
    }
}
