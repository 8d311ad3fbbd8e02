public class Spin {
    static long hot(long x) { for (int i = 0; i < 1000; i++) x = x * 31 + i; return x; }
    public static void main(String[] args) {
        long end = System.nanoTime() + 800_000_000L, t = 0;
        while (System.nanoTime() < end) t += hot(t);
        System.out.println(t);
    }
}
