import java.io.*;
import java.nio.file.*;
import java.util.zip.*;

/**
 * Packs and unpacks traces with the JDK's own ZIP classes, the way the
 * trace recorder does: `deflate0` writes DEFLATED entries at level 0 (stored
 * deflate blocks), `deflate` at the default level, `stored` STORED entries;
 * `unpack` reads a packed trace with ZipInputStream into a folder.
 *
 *   java Pack.java (deflate0|deflate|stored) OUT INFO DATA INDEX [EXTRA_NAME]
 *   java Pack.java unpack PACK DIR
 */
public class Pack {
    public static void main(String[] args) throws IOException {
        if (args[0].equals("unpack")) {
            unpack(Paths.get(args[1]), Paths.get(args[2]));
            return;
        }
        String mode = args[0];
        try (ZipOutputStream zip = new ZipOutputStream(
                new BufferedOutputStream(new FileOutputStream(args[1])))) {
            if (mode.equals("deflate0")) {
                zip.setLevel(0);
            }
            put(zip, mode, "info.txt", Files.readAllBytes(Paths.get(args[2])));
            put(zip, mode, "trace.trace", Files.readAllBytes(Paths.get(args[3])));
            if (!args[4].equals("-")) {
                put(zip, mode, "trace.idx", Files.readAllBytes(Paths.get(args[4])));
            }
            if (args.length > 5) {
                put(zip, mode, args[5], new byte[] {1, 2, 3});
            }
        }
    }

    static void put(ZipOutputStream zip, String mode, String name, byte[] bytes)
            throws IOException {
        ZipEntry entry = new ZipEntry(name);
        if (mode.equals("stored")) {
            CRC32 crc = new CRC32();
            crc.update(bytes);
            entry.setMethod(ZipEntry.STORED);
            entry.setSize(bytes.length);
            entry.setCompressedSize(bytes.length);
            entry.setCrc(crc.getValue());
        }
        zip.putNextEntry(entry);
        zip.write(bytes);
        zip.closeEntry();
    }

    static void unpack(Path pack, Path dir) throws IOException {
        try (ZipInputStream zip = new ZipInputStream(
                new BufferedInputStream(new FileInputStream(pack.toFile())))) {
            ZipEntry entry;
            while ((entry = zip.getNextEntry()) != null) {
                Files.copy(zip, dir.resolve(entry.getName()), StandardCopyOption.REPLACE_EXISTING);
            }
        }
    }
}
