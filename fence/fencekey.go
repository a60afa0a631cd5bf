package fence

import (
	"strconv"
	"strings"
	"sync"
)

// FenceKeyFor returns the fence key that Redis.Set uses for the data key key.
// It is in the same Redis Cluster hash slot as key:
//
//   - If key contains a hash tag ("user:{42}:balance"), the fence key is
//     key+":fence" and shares that tag.
//   - Otherwise, if key contains no '}', the fence key is "{"+key+"}:fence":
//     the whole key becomes the tag.
//   - Otherwise (a key such as "a}b" that has no hash tag but cannot be
//     wrapped in one), the fence key is "{"+t+"}"+key+":fence", where t is
//     the first of "0", "1", ... (base 36) that hashes to key's slot.
//
// FenceKeyFor is deterministic. Distinct keys get distinct fence keys, except
// that key and the tagged spelling of it ("k" and "{k}", or "a}b" and
// "{t}a}b") share one; sharing a mark can only cause extra rejections, never
// an accepted stale write.
//
// Every fence key FenceKeyFor makes ends in ":fence", and Redis.Exec refuses
// every key that does as a key of a command: no resource's write can
// touch another resource's mark.
func FenceKeyFor(key string) string {
	if _, ok := hashTag(key); ok {
		return key + fenceKeySuffix
	}
	if key != "" && !strings.Contains(key, "}") {
		return "{" + key + "}" + fenceKeySuffix
	}
	t := strconv.FormatUint(uint64(slotTags()[keySlot(key)]), 36)
	return "{" + t + "}" + key + fenceKeySuffix
}

// fenceKeySuffix ends every fence key FenceKeyFor makes.
const fenceKeySuffix = ":fence"

// slotTags returns, for each hash slot, the smallest n whose base-36 spelling
// hashes to that slot. The table (64 KiB) is built on first use, which only
// keys that contain '}' but no hash tag need.
var slotTags = sync.OnceValue(func() *[clusterSlots]uint32 {
	var tags [clusterSlots]uint32
	var found [clusterSlots]bool
	for n, left := uint32(0), clusterSlots; left > 0; n++ {
		slot := crc16(strconv.FormatUint(uint64(n), 36)) % clusterSlots
		if !found[slot] {
			found[slot] = true
			tags[slot] = n
			left--
		}
	}
	return &tags
})

// clusterSlots is the number of hash slots of Redis Cluster.
const clusterSlots = 16384

// hashTag returns the part of key that Redis Cluster hashes when it is not
// the whole key: the text between the first '{' and the first '}' after it,
// if that is not empty.
func hashTag(key string) (string, bool) {
	open := strings.IndexByte(key, '{')
	if open < 0 {
		return "", false
	}
	end := strings.IndexByte(key[open+1:], '}')
	if end <= 0 {
		return "", false
	}
	return key[open+1 : open+1+end], true
}

// keySlot returns the Redis Cluster hash slot of key.
func keySlot(key string) uint16 {
	if tag, ok := hashTag(key); ok {
		key = tag
	}
	return crc16(key) % clusterSlots
}

// crc16 is CRC-16/XMODEM (polynomial 0x1021, initial value 0), the checksum
// Redis Cluster uses for key slots.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}
