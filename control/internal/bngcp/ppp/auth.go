package ppp

import (
	"crypto/md5"
	"crypto/subtle"
	"errors"
)

// PAP codes (RFC 1334 section 2.2).
const (
	PAPRequest uint8 = 1
	PAPAck     uint8 = 2
	PAPNak     uint8 = 3
)

// CHAP codes (RFC 1994 section 4).
const (
	CHAPChallenge uint8 = 1
	CHAPResponse  uint8 = 2
	CHAPSuccess   uint8 = 3
	CHAPFailure   uint8 = 4
)

// ErrAuthFormat: a PAP or CHAP packet whose inner lengths do not fit.
var ErrAuthFormat = errors.New("ppp: malformed authentication packet")

// ParsePAPRequest reads an Authenticate-Request's peer id and password.
func ParsePAPRequest(data []byte) (peerID, password []byte, err error) {
	if len(data) < 1 {
		return nil, nil, ErrAuthFormat
	}
	n := int(data[0])
	if 1+n+1 > len(data) {
		return nil, nil, ErrAuthFormat
	}
	peerID = data[1 : 1+n]
	rest := data[1+n:]
	m := int(rest[0])
	if 1+m > len(rest) {
		return nil, nil, ErrAuthFormat
	}
	return peerID, rest[1 : 1+m], nil
}

// PAPRequestData writes an Authenticate-Request's data (a client's).
func PAPRequestData(peerID, password string) []byte {
	b := append([]byte{byte(len(peerID))}, peerID...)
	b = append(b, byte(len(password)))
	return append(b, password...)
}

// PAPReplyData is the data of an Authenticate-Ack/Nak: a message.
func PAPReplyData(msg string) []byte {
	if len(msg) > 255 {
		msg = msg[:255]
	}
	return append([]byte{byte(len(msg))}, msg...)
}

// CHAPValue is a Challenge's or Response's value and name.
type CHAPValue struct {
	Value []byte
	Name  []byte
}

// ParseCHAPValue reads the data of a Challenge or a Response.
func ParseCHAPValue(data []byte) (CHAPValue, error) {
	if len(data) < 1 {
		return CHAPValue{}, ErrAuthFormat
	}
	n := int(data[0])
	if n == 0 || 1+n > len(data) {
		return CHAPValue{}, ErrAuthFormat
	}
	return CHAPValue{Value: data[1 : 1+n], Name: data[1+n:]}, nil
}

// CHAPValueData writes a Challenge's or Response's data.
func CHAPValueData(value []byte, name string) []byte {
	b := append([]byte{byte(len(value))}, value...)
	return append(b, name...)
}

// CHAPMD5 is the response to a challenge (RFC 1994 section 2 and 4.1: the
// MD5 of the identifier, the secret and the challenge value).
func CHAPMD5(id uint8, secret, challenge []byte) []byte {
	h := md5.New()
	h.Write([]byte{id})
	h.Write(secret)
	h.Write(challenge)
	return h.Sum(nil)
}

// CHAPMD5Check compares a response with the one the secret gives, in
// constant time.
func CHAPMD5Check(id uint8, secret, challenge, response []byte) bool {
	want := CHAPMD5(id, secret, challenge)
	return len(response) == len(want) && subtle.ConstantTimeCompare(want, response) == 1
}
